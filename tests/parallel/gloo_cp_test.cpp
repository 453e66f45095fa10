// Context parallelism over Gloo, each rank its own process on loopback (kh_cp_worker):
// ring, Ulysses and 2x2 unified against single-process attention on the whole sequence
// (fp32 within 1e-5) for the native backend and the fixture flash_hub kernel, causal and
// not; uneven slices refused; a rank that dies mid-call fails the others within the timeout.
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "attention/hub_environment.hpp"
#include "kernelhub/context_parallel.hpp"
#include "parallel/rank_launcher.hpp"

// After the torch headers: c10 defines a glog-style CHECK that Catch2's must replace.
#include <catch2/catch.hpp>

using namespace kernelhub::testing;
namespace kp = kernelhub::parallel;

namespace {

// The backends every mode is checked with.
const char* const kBackends = "native,flash_hub,flex";

void require_all_pass(const RanksRun& run) {
  INFO(run.log());
  REQUIRE_FALSE(run.timed_out);
  for (const RankResult& rank : run.ranks) CHECK(rank.exit_code == 0);
}

void equal_to_reference(int world, const std::string& mode) {
  HubEnvironment hub;  // the ranks inherit its HF_ENDPOINT and cache (flash_hub)
  const RanksRun run =
      run_ranks(world, {"--mode", mode, "--scenario", "equal", "--backends", kBackends});
  require_all_pass(run);
  // Every rank reported every (backend, causal) case.
  for (const RankResult& rank : run.ranks) {
    size_t cases = 0;
    for (size_t at = rank.output.find(" ok\n"); at != std::string::npos;
         at = rank.output.find(" ok\n", at + 1)) {
      ++cases;
    }
    CHECK(cases == 6);
  }
}

}  // namespace

TEST_CASE("cp: ring on 2 ranks equals single-process attention", "[parallel][gloo]") {
  equal_to_reference(2, "ring");
}
TEST_CASE("cp: ring on 4 ranks equals single-process attention", "[parallel][gloo]") {
  equal_to_reference(4, "ring");
}
TEST_CASE("cp: Ulysses on 2 ranks equals single-process attention", "[parallel][gloo]") {
  equal_to_reference(2, "ulysses");
}
TEST_CASE("cp: Ulysses on 4 ranks equals single-process attention", "[parallel][gloo]") {
  equal_to_reference(4, "ulysses");
}
TEST_CASE("cp: unified 2x2 equals single-process attention", "[parallel][gloo]") {
  equal_to_reference(4, "unified");
}

TEST_CASE("cp: uneven slices are refused on every rank, not padded", "[parallel][gloo]") {
  for (const char* mode : {"ring", "ulysses"}) {
    INFO(mode);
    require_all_pass(run_ranks(2, {"--mode", mode, "--scenario", "uneven"}));
  }
  require_all_pass(run_ranks(4, {"--mode", "unified", "--scenario", "uneven"}));
}

TEST_CASE("cp: backends and shapes a mode cannot run are refused before any exchange",
          "[parallel][gloo]") {
  for (const char* mode : {"ring", "ulysses"}) {
    INFO(mode);
    require_all_pass(run_ranks(2, {"--mode", mode, "--scenario", "refuse"}));
  }
}

TEST_CASE("cp: a rank that dies mid-call makes the others fail within the timeout",
          "[parallel][gloo]") {
  for (const auto& [world, mode] : std::vector<std::pair<int, std::string>>{
           {2, "ring"}, {4, "ring"}, {4, "ulysses"}, {4, "unified"}}) {
    INFO(mode << ", " << world << " ranks");
    const RanksRun run =
        run_ranks(world, {"--mode", mode, "--scenario", "die", "--timeout-ms", "3000"},
                  std::chrono::seconds(60));
    INFO(run.log());
    REQUIRE_FALSE(run.timed_out);
    // The fault happened: the last rank really exited, mid-call, with its own code.
    REQUIRE(run.ranks.back().exit_code == 42);
    REQUIRE(run.ranks.back().output.find("exiting mid-call") != std::string::npos);
    for (int rank = 0; rank + 1 < world; ++rank) {
      CHECK(run.ranks[rank].exit_code == 0);
      CHECK(run.ranks[rank].output.find("Context parallelism: ") != std::string::npos);
    }
  }
}

TEST_CASE("cp: configs that do not fit the group are refused", "[parallel]") {
  kp::GroupOptions options;
  options.store_port = 0;  // a free port: nobody else joins a group of one
  options.timeout = std::chrono::milliseconds(5000);
  const kp::ProcessGroup solo = kp::ProcessGroup::gloo(options);
  kp::ContextParallelConfig config;
  CHECK_THROWS_WITH(kp::ContextParallel(config, solo),
                    Catch::Contains("Either ring_degree or ulysses_degree must be greater than 1"));
  config.ring_degree = 2;
  CHECK_THROWS_AS(kp::ContextParallel(config, solo), kp::InvalidConfig);
  config.ulysses_degree = 2;
  CHECK_THROWS_WITH(kp::ContextParallel(config, solo), Catch::Contains("must be its size, 1"));
  options.rank = 2;
  options.world_size = 2;
  CHECK_THROWS_AS(kp::ProcessGroup::gloo(options), kp::InvalidConfig);
}

TEST_CASE("cp: a rank that stalls mid-call makes the others fail at the timeout",
          "[parallel][gloo]") {
  const RanksRun run =
      run_ranks(2, {"--mode", "ring", "--scenario", "stall", "--timeout-ms", "2000"},
                std::chrono::seconds(60));
  INFO(run.log());
  REQUIRE_FALSE(run.timed_out);
  // The fault happened: rank 1 stopped answering, and outlived the others' timeout.
  REQUIRE(run.ranks[1].exit_code == 43);
  REQUIRE(run.ranks[1].output.find("stalling mid-call") != std::string::npos);
  CHECK(run.ranks[0].exit_code == 0);
  CHECK(run.ranks[0].output.find("Context parallelism: ") != std::string::npos);
}
