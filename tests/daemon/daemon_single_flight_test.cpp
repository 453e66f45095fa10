// One download per resolved commit: requests that name the same commit differently (v1 and
// v3 on it, or its sha) start flights of their own, which then share one upstream transfer
// of each file.
#include <catch2/catch.hpp>

#include "daemon/daemon_harness.hpp"
#include "kernelhub/hub/server/store_publisher.hpp"
#include "kernelhub/trust/digest.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

TEST_CASE("v1 and v3 on one commit and its sha download each of its files once", "[daemon]") {
  DaemonHarness h;
  // v3 on the same commit as v1 (same tree, message and time: the same commit id).
  hub::server::PublishRequest publish;
  publish.root = h.fx.store;
  publish.repo = kKernelRepo;
  publish.branch = "v3";
  publish.source = h.fx.tmp.path() / "src";
  publish.message = "build";
  publish.timestamp = 1700000000;
  const auto v3 = hub::server::publish_directory(publish);
  REQUIRE(v3);
  REQUIRE(v3->commit == h.fx.commit);

  // The big file takes about 1.5 s: the three flights overlap.
  testing::FaultPlan plan;
  plan.trickle_bytes_per_second = 1u << 20;
  plan.path_filter = kSoName;
  h.fx.server->set_faults(plan);
  h.fx.server->reset_requests();

  auto by_sha = fetch_request(kKernelRepo, 3);
  by_sha.erase("version");
  by_sha["revision"] = h.fx.commit;
  auto by_v3 = fetch_request(kKernelRepo, 2);
  by_v3["version"] = 3;
  std::vector<std::future<Result<std::pair<nlohmann::json, double>>>> clients;
  clients.push_back(fetch_async(h.socket, fetch_request(kKernelRepo, 1)));
  clients.push_back(fetch_async(h.socket, by_v3));
  clients.push_back(fetch_async(h.socket, by_sha));
  for (auto& client : clients) {
    const auto got = client.get();
    INFO((got ? got->first.dump() : got.error().message));
    REQUIRE(got);
    CHECK(got->first.at("type") == "fetched");
    CHECK(got->first.at("commit") == h.fx.commit);
  }
  CHECK(h.daemon->counters().flights == 3);  // three names, three flights
  CHECK(h.fx.server->paced_bytes() == cpu_variant_files().at(kSoName).size());
  const std::string so = "/lfs-objects/" + trust::sha256_hex(cpu_variant_files().at(kSoName));
  CHECK(h.fx.server->count("GET", so) == 1);
  const std::string variant_url = "/resolve/" + h.fx.commit + "/build/" + kCpuVariant + "/";
  for (const auto& [name, content] : cpu_variant_files()) {
    INFO(name);
    CHECK(h.fx.server->count("GET", variant_url + name) == 1);
  }
  CHECK(h.fx.server->count("GET", "/build/" + kCpuVariant + "/metadata.json") == 1);
}
