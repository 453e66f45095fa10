#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>
#include <future>
#include <set>

#include "daemon/daemon_harness.hpp"
#include "kernelhub/trust/digest.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

TEST_CASE("handshake settles on the lower version and the shared capabilities", "[daemon]") {
  DaemonHarness h;
  TestClient newer(h.socket);
  const auto hello = newer.hello(7, {"progress", "zstd", "fds"});
  CHECK(hello.at("type") == "hello");
  CHECK(hello.at("protocol") == 1);
  CHECK(hello.at("capabilities") == nlohmann::json::array({"progress", "fds"}));
  CHECK(hello.at("daemon").get<std::string>().starts_with("kernelhubd/"));

  TestClient older(h.socket);
  const auto refused = older.hello(0);
  CHECK(refused.at("code") == "unsupported_protocol");
  auto after = older.read();
  REQUIRE(after);
  CHECK_FALSE(*after);  // closed

  TestClient eager(h.socket);
  const auto early = eager.call({{"type", "status"}, {"id", 1}});
  CHECK(early.frame.at("code") == "protocol_error");
}

TEST_CASE(
    "fetch hands out read-only fds whose bytes hash to the manifest, and a warm fetch asks nothing "
    "upstream",
    "[daemon]") {
  DaemonHarness h;
  TestClient client(h.socket);
  client.hello();
  auto cold = client.call(fetch_request(kKernelRepo, 1));
  REQUIRE(cold.frame.at("type") == "fetched");
  CHECK(cold.frame.at("id") == 1);
  CHECK(cold.frame.at("commit") == h.fx.commit);
  CHECK(cold.frame.at("from_cache") == false);
  CHECK(cold.progress_events > 0);
  const auto& files = cold.frame.at("files");
  REQUIRE(files.size() == cold.fds.size());
  REQUIRE(files.size() >= 5);  // 4 files + metadata.json
  for (const auto& file : files) {
    const int fd = cold.fds.at(file.at("fd").get<std::size_t>()).get();
    CHECK(trust::sha256_hex(read_fd(fd)) == file.at("sha256"));
    CHECK(read_fd(fd).size() == file.at("size"));
    CHECK((::fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY);
    struct stat st {};
    REQUIRE(::fstat(fd, &st) == 0);
    CHECK((st.st_mode & 07777) == 0444);
  }
  CHECK(std::filesystem::exists(cold.frame.at("snapshot_path").get<std::string>()));

  h.fx.server->reset_requests();
  TestClient again(h.socket);
  again.hello(1, {"fds"});
  auto warm = again.call(fetch_request(kKernelRepo, 2));
  REQUIRE(warm.frame.at("type") == "fetched");
  CHECK(warm.frame.at("from_cache") == true);
  CHECK(warm.progress_events == 0);
  CHECK(warm.fds.size() == files.size());
  CHECK(h.fx.server->requests().empty());

  TestClient no_fds(h.socket);
  no_fds.hello(1, {});
  auto paths_only = no_fds.call(fetch_request(kKernelRepo, 3));
  CHECK(paths_only.fds.empty());
  CHECK_FALSE(paths_only.frame.at("files").at(0).contains("fd"));
  CHECK(h.fx.server->requests().empty());
}

TEST_CASE(
    "trust is decided per client and bounded by the admin policy, before any upstream request",
    "[daemon]") {
  DaemonHarness h("[trust]\nallow_any_opt_in = true\n");
  h.publish_sage();
  TestClient client(h.socket);
  client.hello();
  h.fx.server->reset_requests();

  auto refused = client.call(fetch_request(kSageRepo, 1));
  CHECK(refused.frame.at("code") == "untrusted_publisher");
  CHECK(refused.frame.at("id") == 1);
  auto disabled =
      client.call(fetch_request(kKernelRepo, 2, {{"DIFFUSERS_DISABLE_REMOTE_CODE", "1"}}));
  CHECK(disabled.frame.at("code") == "remote_code_disabled");
  // The client's own variables only: identity or trust claimed elsewhere in the frame is ignored.
  auto impostor = fetch_request(kSageRepo, 3, {{"HOME", "/root"}, {"USER", "root"}});
  impostor["uid"] = 0;
  impostor["trusted"] = true;
  auto claimed = client.call(impostor);
  CHECK(claimed.frame.at("code") == "untrusted_publisher");
  CHECK(h.fx.server->requests().empty());

  auto opted = client.call(fetch_request(kSageRepo, 4, {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}}));
  CHECK(opted.frame.at("type") == "fetched");

  // The admin forbids opting in: refused even with the variable, cached or not.
  std::ofstream(h.policy_file) << "[trust]\nallow_any_opt_in = false\n";
  REQUIRE(h.daemon->reload_policy());
  h.fx.server->reset_requests();
  auto forbidden =
      client.call(fetch_request(kSageRepo, 5, {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}}));
  CHECK(forbidden.frame.at("code") == "untrusted_publisher");
  CHECK(forbidden.frame.at("message").get<std::string>().find("administrator") !=
        std::string::npos);
  CHECK(h.fx.server->requests().empty());

  // A broken policy file keeps the policy in force.
  std::ofstream(h.policy_file) << "[trust\n";
  CHECK_FALSE(h.daemon->reload_policy());
  auto still = client.call(fetch_request(kSageRepo, 6, {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}}));
  CHECK(still.frame.at("code") == "untrusted_publisher");
  CHECK(client.call(fetch_request(kKernelRepo, 7)).frame.at("type") == "fetched");
}

TEST_CASE("offline clients are served from the cache only", "[daemon]") {
  DaemonHarness h;
  TestClient client(h.socket);
  client.hello();
  auto missing = client.call(fetch_request(kKernelRepo, 1, {{"HF_HUB_OFFLINE", "1"}}));
  CHECK(missing.frame.at("code") == "offline_not_cached");
  CHECK(h.fx.file_gets() == 0);
  REQUIRE(client.call(fetch_request(kKernelRepo, 2)).frame.at("type") == "fetched");
  auto cached = client.call(fetch_request(kKernelRepo, 3, {{"HF_HUB_OFFLINE", "1"}}));
  CHECK(cached.frame.at("type") == "fetched");
}

TEST_CASE("8 concurrent clients of an uncached kernel share one download", "[daemon]") {
  DaemonHarness h;
  h.fx.server->reset_requests();
  // Workers only collect (Catch2 asserts on this thread only): the handed-out contents, or
  // the error that stopped them.
  std::vector<std::future<Result<std::vector<std::string>>>> clients;
  clients.reserve(8);
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::async(std::launch::async, [&h, i]() -> Result<std::vector<std::string>> {
      auto client = TestClient::connect(h.socket);
      if (!client) return fail(std::move(client).error());
      if (auto hello = client->try_hello(); !hello) return fail(std::move(hello).error());
      auto reply = client->try_call(fetch_request(kKernelRepo, static_cast<std::uint64_t>(i)));
      if (!reply) return fail(std::move(reply).error());
      if (reply->frame.at("type") != "fetched")
        return fail(ErrorCode::internal, "not fetched: " + reply->frame.dump());
      std::vector<std::string> contents;
      for (const auto& fd : reply->fds) contents.push_back(read_fd(fd.get()));
      return contents;
    }));
  }
  std::set<std::vector<std::string>> distinct;
  for (auto& c : clients) {
    auto contents = c.get();
    INFO((contents ? std::string("fetched") : contents.error().message));
    REQUIRE(contents);
    distinct.insert(std::move(*contents));
  }
  REQUIRE(distinct.size() == 1);
  CHECK(distinct.begin()->size() >= 5);
  std::set<std::string> paths;
  for (const auto& r : h.fx.server->requests()) {
    if (r.method == "GET" && (r.path.find("/resolve/") != std::string::npos ||
                              r.path.find("/lfs-objects/") != std::string::npos)) {
      CHECK(paths.insert(r.path).second);  // every file fetched once
    }
  }
  CHECK(!paths.empty());

  TestClient status(h.socket);
  status.hello();
  const auto counters = status.call({{"type", "status"}, {"id", 9}}).frame.at("counters");
  CHECK(counters.at("requests") >= 8);
  CHECK(counters.at("misses") == 1);
  CHECK(counters.at("connections") >= 9);
  CHECK(counters.at("active_connections") >= 1);
  CHECK(counters.at("bytes_downloaded") > 1024 * 1024);
  CHECK(counters.at("upstream_requests") >= paths.size());
}
