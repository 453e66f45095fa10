// The trust rule end to end through `kernelhub download`: refusals happen before any request
// reaches the Hub, and name the variable that would change the decision.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "e2e/e2e_support.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;

namespace {

CommandResult fetch(const FixtureHub& hub, const fs::path& cache, const std::string& repo,
                    EnvOverrides env) {
  env.try_emplace("HF_ENDPOINT", hub.endpoint());
  return run_kernelhub({"download", repo, "--version", "1", "--cache-dir", cache.string()}, env);
}

}  // namespace

TEST_CASE("SageAttention is refused without DIFFUSERS_TRUST_REMOTE_KERNELS, before any request",
          "[e2e][trust]") {
  FixtureHub hub;
  TempDir cache;
  for (const char* value : {"", "0", "false", "nope"}) {
    const auto refused =
        fetch(hub, cache.path(), "SageAttention/relu", {{"DIFFUSERS_TRUST_REMOTE_KERNELS", value}});
    INFO("TRUST=" << value << " stderr: " << refused.err);
    CHECK(refused.exit_code != 0);
    CHECK(refused.err.find("SageAttention") != std::string::npos);
    CHECK(refused.err.find("DIFFUSERS_TRUST_REMOTE_KERNELS") != std::string::npos);
  }
  CHECK(hub.total_requests() == 0);
  CHECK_FALSE(fs::exists(cache.path() / "kernels--SageAttention--relu" / "snapshots"));
}

TEST_CASE("SageAttention is allowed with DIFFUSERS_TRUST_REMOTE_KERNELS true", "[e2e][trust]") {
  FixtureHub hub;
  for (const char* value : {"1", "TRUE", "yes", "On"}) {
    TempDir cache;
    const auto allowed =
        fetch(hub, cache.path(), "SageAttention/relu", {{"DIFFUSERS_TRUST_REMOTE_KERNELS", value}});
    INFO("TRUST=" << value << " stderr: " << allowed.err);
    REQUIRE(allowed.exit_code == 0);
    CHECK(fs::is_directory(cache.path() / "kernels--SageAttention--relu" / "snapshots"));
  }
  CHECK(hub.count("GET", "/resolve/") + hub.count("GET", "/lfs") > 0);
}

TEST_CASE("DIFFUSERS_DISABLE_REMOTE_CODE refuses kernels-community too, and wins over TRUST",
          "[e2e][trust]") {
  FixtureHub hub;
  TempDir cache;
  const auto community =
      fetch(hub, cache.path(), "kernels-community/relu", {{"DIFFUSERS_DISABLE_REMOTE_CODE", "1"}});
  CHECK(community.exit_code != 0);
  CHECK(community.err.find("DIFFUSERS_DISABLE_REMOTE_CODE") != std::string::npos);

  const auto both =
      fetch(hub, cache.path(), "SageAttention/relu",
            {{"DIFFUSERS_DISABLE_REMOTE_CODE", "true"}, {"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}});
  CHECK(both.exit_code != 0);
  CHECK(both.err.find("DIFFUSERS_DISABLE_REMOTE_CODE") != std::string::npos);
  CHECK(hub.total_requests() == 0);

  const auto off =
      fetch(hub, cache.path(), "kernels-community/relu", {{"DIFFUSERS_DISABLE_REMOTE_CODE", "0"}});
  INFO(off.err);
  CHECK(off.exit_code == 0);
}

TEST_CASE("an admin policy that forbids opt-in beats the user's variable", "[e2e][trust][policy]") {
  FixtureHub hub;
  TempDir cache;
  const fs::path policy = cache.path() / "policy.toml";
  std::ofstream(policy) << "[trust]\nallow_any_opt_in = false\nopt_in = []\n";
  const auto refused =
      fetch(hub, cache.path() / "c", "SageAttention/relu",
            {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}, {"KERNELHUB_POLICY", policy.string()}});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("SageAttention") != std::string::npos);
  CHECK(hub.total_requests() == 0);

  std::ofstream(policy) << "[trust]\nallow_any_opt_in = false\nopt_in = [\"SageAttention\"]\n";
  const auto allowed =
      fetch(hub, cache.path() / "c", "SageAttention/relu",
            {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}, {"KERNELHUB_POLICY", policy.string()}});
  INFO(allowed.err);
  CHECK(allowed.exit_code == 0);
}
