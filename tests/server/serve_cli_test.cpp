#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "server/store_fixture.hpp"

using namespace kernelhub;
namespace fs = std::filesystem;

namespace {
const std::string kBin = std::string(KH_BIN_DIR) + "/kernelhub";
const std::string kTestHub = std::string(KH_BIN_DIR) + "/kernelhub-test-hub";
}  // namespace

TEST_CASE("kernelhub publish prints the commit and kernelhub serve serves it", "[server][cli]") {
  testing::TempDir tmp;
  testing::make_source_tree(tmp.path() / "src");
  const auto store = tmp.path() / "store";
  auto published = testing::run_command({kBin, "publish", "--root", store.string(), "--repo",
                                         "org-a/kern", "--branch", "v1", "--tag", "v1.0.0",
                                         "--message", "first", (tmp.path() / "src").string()});
  INFO(published.err);
  REQUIRE(published.exit_code == 0);
  const std::string commit = published.out.substr(0, published.out.find('\n'));
  REQUIRE(commit.size() == 40);

  const auto port_file = tmp.path() / "port";
  testing::BackgroundProcess serve(
      {kBin, "serve", "--root", store.string(), "--port", "0", "--port-file", port_file.string()});
  const int port = std::stoi(testing::wait_for_file(port_file));
  REQUIRE(port > 0);
  httplib::Client c("127.0.0.1", port);
  auto res = c.Get("/api/kernels/org-a/kern/refs");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  const auto refs = nlohmann::json::parse(res->body);
  CHECK(refs["branches"][0]["name"] == "v1");
  CHECK(refs["branches"][0]["targetCommit"] == commit);
  CHECK(refs["tags"][0]["targetCommit"] == commit);
  CHECK(refs["converts"].empty());
}

TEST_CASE("kernelhub serve stops cleanly on SIGTERM", "[server][cli]") {
  testing::TempDir tmp;
  const auto port_file = tmp.path() / "port";
  const std::string script = "\"" + kBin + "\" serve --root \"" + tmp.path().string() +
                             "\" --port 0 --port-file \"" + port_file.string() +
                             "\" & pid=$!; while [ ! -s \"" + port_file.string() +
                             "\" ]; do sleep 0.05; done; kill -TERM $pid; wait $pid";
  auto result = testing::run_command({"/bin/sh", "-c", script}, {}, std::chrono::seconds(30));
  CHECK(result.exit_code == 0);
}

TEST_CASE("kernelhub publish exits non-zero with one line on a hostile tree", "[server][cli]") {
  testing::TempDir tmp;
  testing::make_source_tree(tmp.path() / "src");
  fs::create_symlink("/etc/passwd", tmp.path() / "src" / "passwd");
  auto r =
      testing::run_command({kBin, "publish", "--root", (tmp.path() / "store").string(), "--repo",
                            "org-a/kern", "--branch", "main", (tmp.path() / "src").string()});
  CHECK(r.exit_code != 0);
  CHECK(r.out.empty());
  CHECK(r.err.find("symbolic link") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("kernelhub serve --help offers the store's options and no test knob", "[server][cli]") {
  auto help = testing::run_command({kBin, "serve", "--help"});
  REQUIRE(help.exit_code == 0);
  for (const char* option : {"--root", "--bind", "--port", "--port-file", "--tls-cert", "--tls-key",
                             "--trusted-publisher", "--tree-page-size"}) {
    CHECK(help.out.find(option) != std::string::npos);
  }
  CHECK(help.out.find("fault") == std::string::npos);
  CHECK(help.out.find("test-endpoints") == std::string::npos);
  auto refused = testing::run_command({kBin, "serve", "--root", "/tmp", "--fault-corrupt"});
  CHECK(refused.exit_code != 0);
}

TEST_CASE("kernelhub-test-hub's real-Hub fault flags: rename, anonymous 401, path-scoped status",
          "[server][cli]") {
  testing::TempDir tmp;
  testing::make_source_tree(tmp.path() / "src");
  const auto store = tmp.path() / "store";
  REQUIRE(testing::run_command({kBin, "publish", "--root", store.string(), "--repo", "org-a/kern",
                                "--branch", "v1", (tmp.path() / "src").string()})
              .exit_code == 0);
  const auto port_file = tmp.path() / "port";
  testing::BackgroundProcess serve(
      {kTestHub, "--root", store.string(), "--port", "0", "--port-file", port_file.string(),
       "--fault-rename", "org-a/old=org-b/kern", "--fault-anonymous-401", "--fault-private-repo",
       "org-a/kern", "--fault-status", "503", "--fault-count", "1", "--fault-status-path-filter",
       "/revision/"});
  const int port = std::stoi(testing::wait_for_file(port_file));
  httplib::Client c("127.0.0.1", port);
  auto moved = c.Get("/api/kernels/org-a/old/tree/v1/build?recursive=true");
  REQUIRE(moved);
  CHECK(moved->status == 307);
  CHECK(moved->get_header_value("Location") ==
        "/api/kernels/org-b/kern/tree/v1/build?recursive=true");
  auto anonymous = c.Get("/api/kernels/org-a/kern/refs");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
  CHECK_FALSE(anonymous->has_header("X-Error-Code"));
  CHECK(anonymous->get_header_value("X-Error-Message") == "Invalid username or password.");
  const httplib::Headers token{{"Authorization", "Bearer hf_x"}};
  auto refs = c.Get("/api/kernels/org-a/kern/refs", token);
  REQUIRE(refs);
  CHECK(refs->status == 200);  // the 503 is kept for /revision/
  auto revision = c.Get("/api/kernels/org-a/kern/revision/v1", token);
  REQUIRE(revision);
  CHECK(revision->status == 503);
  CHECK(c.Get("/api/kernels/org-a/kern/revision/v1", token)->status == 200);
  auto bad =
      testing::run_command({kTestHub, "--root", store.string(), "--fault-rename", "not-a-rename"});
  CHECK(bad.exit_code == 2);
}
