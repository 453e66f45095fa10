// kernelhubd's local Hub (--http): what huggingface_hub reads from it, that file bytes come
// from the verified cache through one shared download, and that trust over HTTP is the
// admin policy's alone. The official clients against it: tests/conformance/test_daemon_http.py.
#include <httplib.h>

#include <catch2/catch.hpp>

#include <future>
#include <nlohmann/json.hpp>

#include "daemon/daemon_harness.hpp"
#include "kernelhub/daemon/local_hub.hpp"
#include "kernelhub/trust/digest.hpp"
#include "support/fault_hub/fault_hub.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

std::string resolve_path(const trust::RepoId& repo, const std::string& revision,
                         const std::string& path) {
  return "/kernels/" + repo.str() + "/resolve/" + revision + "/" + path;
}

httplib::Client client_of(const DaemonHarness& h) {
  httplib::Client client("127.0.0.1", h.daemon->http_port());
  client.set_read_timeout(30, 0);
  return client;
}

}  // namespace

TEST_CASE("the local Hub listens on loopback only", "[daemon][http]") {
  CHECK(daemon::parse_http_listen("127.0.0.1:8765"));
  CHECK(daemon::parse_http_listen("[::1]:0"));
  CHECK(daemon::parse_http_listen("localhost:1"));
  for (const char* bad : {"0.0.0.0:8765", "10.0.0.1:80", "127.0.0.1", "127.0.0.1:99999",
                          "127.0.0.1:x", ":80", "[::]:80"}) {
    INFO(bad);
    const auto parsed = daemon::parse_http_listen(bad);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == ErrorCode::invalid_argument);
  }
}

TEST_CASE("the local Hub serves a kernel from the verified cache, one download for all",
          "[daemon][http]") {
  DaemonHarness h(std::nullopt, {}, std::chrono::seconds(60), "127.0.0.1:0");
  REQUIRE(h.daemon->http_port() > 0);
  auto client = client_of(h);
  const auto files = cpu_variant_files();
  const std::string so_path = "build/" + kCpuVariant + "/" + kSoName;

  SECTION("refs, revision and tree answer as the Hub does") {
    auto refs = client.Get("/api/kernels/" + kKernelRepo.str() + "/refs");
    REQUIRE(refs);
    REQUIRE(refs->status == 200);
    const auto branches = nlohmann::json::parse(refs->body).at("branches");
    CHECK(branches.size() == 2);
    auto revision = client.Get("/api/kernels/" + kKernelRepo.str() + "/revision/v1");
    REQUIRE(revision);
    CHECK(nlohmann::json::parse(revision->body).at("sha") == h.fx.commit);
    auto tree = client.Get("/api/kernels/" + kKernelRepo.str() + "/tree/" + h.fx.commit +
                           "/build/" + kCpuVariant);
    REQUIRE(tree);
    bool saw_lfs = false;
    for (const auto& entry : nlohmann::json::parse(tree->body)) {
      if (entry.at("path") == so_path) {
        saw_lfs = entry.contains("lfs") && entry["lfs"].at("size") == files.at(kSoName).size();
      }
    }
    CHECK(saw_lfs);
  }

  SECTION("HEAD carries what huggingface_hub reads; GET the verified bytes") {
    auto head = client.Head(resolve_path(kKernelRepo, "v1", so_path));
    REQUIRE(head);
    REQUIRE(head->status == 200);
    CHECK(head->get_header_value("X-Repo-Commit") == h.fx.commit);
    CHECK(head->get_header_value("X-Linked-Etag") ==
          "\"" + trust::sha256_hex(files.at(kSoName)) + "\"");
    CHECK(head->get_header_value("X-Linked-Size") == std::to_string(files.at(kSoName).size()));
    CHECK(h.fx.file_gets() == 0);  // HEAD downloads nothing

    // Eight clients at once: one flight downloads each file of the variant once.
    std::vector<std::future<httplib::Result>> gets;
    gets.reserve(8);
    for (int i = 0; i < 8; ++i) {
      gets.push_back(std::async(std::launch::async, [&] {
        auto c = client_of(h);
        return c.Get(resolve_path(kKernelRepo, "v1", so_path));
      }));
    }
    for (auto& get : gets) {
      auto res = get.get();
      REQUIRE(res);
      REQUIRE(res->status == 200);
      CHECK(res->body == files.at(kSoName));
    }
    const std::string variant_dir = "/resolve/" + h.fx.commit + "/build/" + kCpuVariant + "/";
    for (const auto& [name, content] : files) {
      INFO(name);
      CHECK(h.fx.server->count("GET", variant_dir + name) == 1);
    }
    const auto downloads = h.fx.file_gets();
    auto small =
        client.Get(resolve_path(kKernelRepo, h.fx.commit, "build/" + kCpuVariant + "/__init__.py"));
    REQUIRE(small);
    CHECK(small->body == files.at("__init__.py"));
    CHECK(small->get_header_value("ETag") ==
          "\"" + trust::git_blob_sha1_hex(files.at("__init__.py")) + "\"");
    CHECK(h.fx.file_gets() == downloads);  // warm now
  }

  SECTION("files outside build/ pass through checked; missing ones are EntryNotFound") {
    auto readme = client.Get(resolve_path(kKernelRepo, "main", "README.md"));
    REQUIRE(readme);
    CHECK(readme->status == 200);
    CHECK(readme->body == "# demo\n");
    auto missing = client.Get(resolve_path(kKernelRepo, "main", "kernel-status.toml"));
    REQUIRE(missing);
    CHECK(missing->status == 404);
    CHECK(missing->get_header_value("X-Error-Code") == "EntryNotFound");

    testing::FaultPlan corrupt;
    corrupt.corrupt_one_byte = true;
    corrupt.path_filter = "README";
    h.fx.server->set_faults(corrupt);
    h.fx.server->reset_requests();
    auto corrupted = client.Get(resolve_path(kKernelRepo, h.fx.commit, "README.md"));
    REQUIRE(corrupted);
    CHECK(h.fx.server->count("GET", "README.md") == 1);  // the fault was served
    CHECK(corrupted->status == 502);
    CHECK(corrupted->body.find("do not match") != std::string::npos);
  }
}

TEST_CASE("a Range header gets the whole file with 200, a malformed one too", "[daemon][http]") {
  DaemonHarness h(std::nullopt, {}, std::chrono::seconds(60), "127.0.0.1:0");
  auto client = client_of(h);
  const auto files = cpu_variant_files();
  const std::string path = resolve_path(kKernelRepo, "v1", "build/" + kCpuVariant + "/" + kSoName);
  // httplib 0.11 answered the malformed ones 416 "no such endpoint" before routing.
  for (const char* range : {"bytes=0-3", "bytes=abc", "bytes=9-2", "bytes=-", "pages=1-2",
                            "bytes=99999999999999999999999-"}) {
    INFO(range);
    auto res = client.Get(path, {{"Range", range}});
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->body == files.at(kSoName));
    CHECK_FALSE(res->has_header("Content-Range"));
  }
}

TEST_CASE("kernelhubd --http localhost listens on 127.0.0.1, the address it reports",
          "[daemon][http]") {
  DaemonHarness h(std::nullopt, {}, std::chrono::seconds(60), "localhost:0");
  REQUIRE(h.daemon->http_port() > 0);
  httplib::Client client("127.0.0.1", h.daemon->http_port());
  auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->status == 200);
}

TEST_CASE("over HTTP the admin policy alone decides trust", "[daemon][http]") {
  DaemonHarness h(std::nullopt, {}, std::chrono::seconds(60), "127.0.0.1:0");
  h.publish_sage();
  auto client = client_of(h);
  auto overview = client.Get("/api/organizations/" + kSageRepo.org + "/overview");
  REQUIRE(overview);
  CHECK(nlohmann::json::parse(overview->body).at("trustedKernelPublisher") == false);
  auto trusted = client.Get("/api/organizations/kernels-community/overview");
  REQUIRE(trusted);
  CHECK(nlohmann::json::parse(trusted->body).at("trustedKernelPublisher") == true);

  h.fx.server->reset_requests();
  auto refused = client.Get("/api/kernels/" + kSageRepo.str() + "/refs");
  REQUIRE(refused);
  CHECK(refused->status == 403);
  CHECK(refused->get_header_value("X-Error-Message").find("admin policy alone decides") !=
        std::string::npos);
  CHECK(h.fx.server->requests().empty());  // nothing about it was asked upstream
  const auto counters = h.daemon->counters();
  CHECK(counters.trust_refused == 1);
  CHECK(counters.errors_by_class.at("untrusted_publisher") == 1);

  auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("kernelhub_refusals_total{decision=\"trust\"} 1") != std::string::npos);
}

TEST_CASE("the policy can trust a publisher for HTTP clients", "[daemon][http]") {
  DaemonHarness h("[trust]\npublishers = [\"kernels-community\", \"SageAttention\"]\n", {},
                  std::chrono::seconds(60), "127.0.0.1:0");
  h.publish_sage();
  auto client = client_of(h);
  auto refs = client.Get("/api/kernels/" + kSageRepo.str() + "/refs");
  REQUIRE(refs);
  CHECK(refs->status == 200);
}

TEST_CASE("the local Hub and kernelhub serve answer from one route table", "[daemon][http]") {
  DaemonHarness h(std::nullopt, {}, std::chrono::seconds(60), "127.0.0.1:0");
  auto local = client_of(h);
  httplib::Client store("127.0.0.1", h.fx.server->port());
  const auto json_of = [](httplib::Client& client, const std::string& path) {
    auto reply = client.Get(path);
    REQUIRE(reply);
    INFO(path << ": " << reply->body);
    REQUIRE(reply->status == 200);
    return nlohmann::json::parse(reply->body);
  };
  const std::string api = "/api/kernels/" + kKernelRepo.str();
  // The same repo through both sources: the store itself, and kernelhubd's upstream memo of it.
  for (const std::string& tail :
       {std::string("/refs"), std::string("/tree/v1"), std::string("/tree/v1/build?recursive=true"),
        "/tree/main/build/" + kCpuVariant}) {
    const std::string path = api + tail;
    INFO(path);
    CHECK(json_of(local, path) == json_of(store, path));
  }
  // Repo info: the same keys, less the store's commit times (kernelhubd keeps no history).
  auto info = json_of(store, api + "/revision/v1");
  info.erase("lastModified");
  info.erase("createdAt");
  CHECK(json_of(local, api + "/revision/v1") == info);
  // Both refuse what they cannot answer the same way the Hub does.
  for (auto* client : {&local, &store}) {
    auto missing = client->Get(api + "/tree/v1/no-such-folder");
    REQUIRE(missing);
    CHECK(missing->status == 404);
    CHECK(missing->get_header_value("X-Error-Code") == "EntryNotFound");
    auto bad_cursor = client->Get(api + "/tree/v1?cursor=x");
    REQUIRE(bad_cursor);
    CHECK(bad_cursor->status == 400);
  }
}
