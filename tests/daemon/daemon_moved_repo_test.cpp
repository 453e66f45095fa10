// The daemon path of what the real Hub does to a repo over time (research/hub-realism.md #2,
// #9): a renamed or transferred repo is handed out under its new name, only to clients whose
// own trust variables allow the new publisher, and a Hub error served from the cache says so.
// Each case first proves from the server's request log that its fault happened.
#include <catch2/catch.hpp>

#include "daemon/daemon_harness.hpp"
#include "kernelhub/trust/digest.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

void check_handed_out(const Reply& reply) {
  const auto& files = reply.frame.at("files");
  REQUIRE(files.size() == reply.fds.size());
  for (const auto& file : files) {
    const int fd = reply.fds.at(file.at("fd").get<std::size_t>()).get();
    CHECK(trust::sha256_hex(read_fd(fd)) == file.at("sha256"));
  }
}

}  // namespace

TEST_CASE("a renamed repo is fetched through the daemon and handed out under its new name",
          "[daemon][realism][rename]") {
  DaemonHarness h;
  testing::FaultPlan plan;
  plan.renames = {{"kernels-community/old-name", "kernels-community/demo-fetch"}};
  h.fx.server->set_faults(plan);
  TestClient client(h.socket);
  client.hello();
  const auto reply = client.call(fetch_request({"kernels-community", "old-name"}, 1));
  CHECK(h.fx.server->count_status(307, "/api/kernels/kernels-community/old-name/") == 1);
  INFO(reply.frame.dump());
  REQUIRE(reply.frame.at("type") == "fetched");
  CHECK(reply.frame.at("repo") == "kernels-community/demo-fetch");
  CHECK(reply.frame.at("commit") == h.fx.commit);
  check_handed_out(reply);
}

TEST_CASE(
    "a repo transferred to an untrusted org is handed out only to clients that opted in, "
    "though the shared download follows it",
    "[daemon][realism][rename][trust]") {
  DaemonHarness h;
  h.publish_sage();
  testing::FaultPlan plan;
  plan.renames = {{"kernels-community/moved", "SageAttention/demo-fetch"}};
  h.fx.server->set_faults(plan);
  TestClient client(h.socket);
  client.hello();

  const auto refused = client.call(fetch_request({"kernels-community", "moved"}, 1));
  CHECK(h.fx.server->count_status(307, "kernels-community/moved") >= 1);
  INFO(refused.frame.dump());
  CHECK(refused.frame.at("type") == "error");
  CHECK(refused.frame.at("code") == "untrusted_publisher");
  const auto message = refused.frame.at("message").get<std::string>();
  CHECK(message.find("now resolves to SageAttention/demo-fetch") != std::string::npos);
  CHECK(message.find("DIFFUSERS_TRUST_REMOTE_KERNELS") != std::string::npos);
  CHECK(refused.fds.empty());
  // The shared download did follow the move: the new org was asked for its files.
  CHECK(h.fx.server->count("GET", "SageAttention/demo-fetch") >= 1);

  const auto allowed = client.call(
      fetch_request({"kernels-community", "moved"}, 2, {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}}));
  INFO(allowed.frame.dump());
  REQUIRE(allowed.frame.at("type") == "fetched");
  CHECK(allowed.frame.at("repo") == "SageAttention/demo-fetch");
  check_handed_out(allowed);

  // The opt-out still wins over the opt-in for the moved repo.
  const auto disabled = client.call(fetch_request(
      {"kernels-community", "moved"}, 3,
      {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}, {"DIFFUSERS_DISABLE_REMOTE_CODE", "1"}}));
  CHECK(disabled.frame.at("type") == "error");
  CHECK(disabled.frame.at("code") == "remote_code_disabled");
  CHECK(disabled.fds.empty());
}

TEST_CASE("a Hub error on version resolution is served from the daemon's cache and says so",
          "[daemon][realism][fallback]") {
  DaemonHarness h(std::nullopt, {}, std::chrono::seconds(0));
  TestClient client(h.socket);
  client.hello();
  REQUIRE(client.call(fetch_request(kKernelRepo, 1)).frame.at("type") == "fetched");

  h.fx.server->reset_requests();
  testing::FaultPlan plan;
  plan.fail_status = 503;
  plan.fail_count = 1000;
  plan.fail_path_filter = "/refs";
  h.fx.server->set_faults(plan);
  const auto reply = client.call(fetch_request(kKernelRepo, 2));
  CHECK(h.fx.server->count_status(503, "/refs") == 1);  // asked once, not retried
  INFO(reply.frame.dump());
  REQUIRE(reply.frame.at("type") == "fetched");
  CHECK(reply.frame.at("from_cache") == true);
  CHECK(reply.frame.at("commit") == h.fx.commit);
  const auto fallback = reply.frame.value("cache_fallback", "");
  CHECK(fallback.find("http_status") == 0);
  CHECK(fallback.find("HTTP 503") != std::string::npos);
  check_handed_out(reply);
}
