// kernelhubd's local Hub keeps the Hub's definite "not there" (RepoNotFound, RevisionNotFound,
// EntryNotFound) for a few seconds, bounded by --resolve-ttl, so clients retrying a wrong name
// do not cost an upstream round each (two for a repo: the kernel type, then the model type).
// A transient failure (here 503) is never kept. The upstream's request log counts.
#include <httplib.h>

#include <catch2/catch.hpp>

#include <thread>

#include "daemon/daemon_harness.hpp"
#include "kernelhub/daemon/upstream_metadata.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

httplib::Client client_of(const DaemonHarness& h) {
  httplib::Client client("127.0.0.1", h.daemon->http_port());
  client.set_read_timeout(30, 0);
  return client;
}

// `times` GETs of `path`, each answered `status`; the upstream requests they cost.
std::size_t upstream_cost(DaemonHarness& h, const std::string& path, int times, int status) {
  auto client = client_of(h);
  const auto before = h.fx.server->requests().size();
  for (int i = 0; i < times; ++i) {
    auto reply = client.Get(path);
    REQUIRE(reply);
    CHECK(reply->status == status);
  }
  return h.fx.server->requests().size() - before;
}

}  // namespace

TEST_CASE("the local Hub answers repeated misses from its memo for a few seconds",
          "[daemon][http][miss]") {
  DaemonHarness h(std::nullopt, {}, std::chrono::seconds(60), "127.0.0.1:0");
  const std::string missing = "/api/kernels/kernels-community/no-such-kernel";

  SECTION("a missing repo: two upstream requests once, then none") {
    CHECK(upstream_cost(h, missing + "/refs", 1, 404) == 2);  // kernel type, then model type
    CHECK(h.fx.server->count_status(404, "/no-such-kernel/refs") == 2);
    CHECK(upstream_cost(h, missing + "/refs", 5, 404) == 0);
    CHECK(upstream_cost(h, missing + "/revision/v1", 1, 404) == 2);
    CHECK(upstream_cost(h, missing + "/revision/v1", 5, 404) == 0);
    auto client = client_of(h);
    auto again = client.Get(missing + "/revision/v1");
    REQUIRE(again);
    CHECK(again->get_header_value("X-Error-Code") == "RepoNotFound");  // the same answer
  }

  SECTION("a missing revision and a missing folder") {
    const std::string repo = "/api/kernels/" + kKernelRepo.str();
    CHECK(upstream_cost(h, repo + "/revision/v9", 1, 404) == 1);
    CHECK(upstream_cost(h, repo + "/revision/v9", 5, 404) == 0);
    CHECK(upstream_cost(h, repo + "/tree/" + h.fx.commit + "/no-such-folder", 1, 404) == 1);
    CHECK(upstream_cost(h, repo + "/tree/" + h.fx.commit + "/no-such-folder", 5, 404) == 0);
    CHECK(upstream_cost(h, repo + "/revision/v1", 1, 200) == 1);  // answers are unaffected
  }
}

TEST_CASE("a kept miss expires with its TTL, never past --resolve-ttl", "[daemon][http][miss]") {
  // --resolve-ttl 1: a miss is kept 1 s (min(resolve TTL, kMissTtl)).
  static_assert(daemon::kMissTtl > std::chrono::seconds(1));
  DaemonHarness h(std::nullopt, {}, std::chrono::seconds(1), "127.0.0.1:0");
  const std::string missing = "/api/kernels/kernels-community/no-such-kernel/refs";
  CHECK(upstream_cost(h, missing, 2, 404) == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  CHECK(upstream_cost(h, missing, 2, 404) == 2);  // asked again once, then kept again

  DaemonHarness none(std::nullopt, {}, std::chrono::seconds(0), "127.0.0.1:0");
  CHECK(upstream_cost(none, missing, 3, 404) == 6);  // --resolve-ttl 0: nothing kept
}

TEST_CASE("a transient upstream failure is never kept", "[daemon][http][miss]") {
  DaemonHarness h(std::nullopt, {}, std::chrono::seconds(60), "127.0.0.1:0");
  testing::FaultPlan plan;
  plan.fail_status = 503;
  plan.fail_count = 1000;
  plan.fail_path_filter = "/refs";
  h.fx.server->set_faults(plan);
  const std::string refs = "/api/kernels/" + kKernelRepo.str() + "/refs";
  CHECK(upstream_cost(h, refs, 1, 502) >= 1);
  CHECK(h.fx.server->count_status(503, "/refs") >= 1);  // the fault was served
  h.fx.server->set_faults({});
  CHECK(upstream_cost(h, refs, 1, 200) == 1);  // asked again: the failure was not kept
}
