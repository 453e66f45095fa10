// `--mapping` of lock, prefetch and pin through the real CLI in embedded mode: a fleet
// resolves, fetches and pins every kernel a layer mapping names before the model starts.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "e2e/e2e_support.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

TEST_CASE("lock, prefetch and pin take a layer mapping file", "[e2e][mapping]") {
  FixtureHub hub;
  TempDir dir;
  const std::string cache = (dir.path() / "cache").string();
  const EnvOverrides env{{"HF_ENDPOINT", hub.endpoint()}, {"KERNELHUB_LOCKFILE", ""}};
  const auto cli = [&](std::vector<std::string> args, bool with_cache = true) {
    if (with_cache) args.insert(args.end(), {"--cache-dir", cache});
    return run_kernelhub(args, env);
  };
  const fs::path mapping = dir.path() / "layers.toml";
  std::ofstream(mapping) << R"(
[[layers]]
name = "SiLU"
device = "cpu"
repo = "kernels-community/relu"
layer = "Silu"
version = 1

[[layers]]
name = "SiLU"
device = "cuda"
repo = "kernels-community/relu"
layer = "Silu"
version = 1

[[layers]]
name = "GeLU"
device = "cpu"
repo = "kernels-community/relu"
layer = "Gelu"
revision = "v2"

[[layers]]
name = "RMSNorm"
device = "cpu"
path = "local-build"
layer = "RMSNorm"
)";

  // lock: both hub entries, once each, in kernels' format beside the mapping.
  const auto locked = cli({"lock", "--mapping", mapping.string()}, /*with_cache=*/false);
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  std::ifstream lock_in(dir.path() / "kernels.lock");
  const auto lock = json::parse(lock_in);
  REQUIRE(lock.size() == 2);
  CHECK(lock[0].at("dependency").at("repo-id") == "kernels-community/relu");
  CHECK(lock[0].at("dependency").at("version") == 1);
  CHECK(lock[1].at("dependency").at("revision") == "v2");

  // prefetch: the two kernels; the local build needs nothing.
  const auto prefetched =
      cli({"prefetch", "--mapping", mapping.string(), "--variant", kVariant, "--json"});
  INFO(prefetched.err);
  REQUIRE(prefetched.exit_code == 0);
  CHECK_THAT(prefetched.err, Catch::Contains("1 local build(s) in the mapping need nothing"));
  const auto fetched = json::parse(prefetched.out);
  REQUIRE(fetched.size() == 2);
  CHECK(fetched[0].at("commit") == lock[0].at("lock").at("commit"));
  CHECK(fetched[1].at("commit") == lock[1].at("lock").at("commit"));

  // A locked entry pins its lockfile's commit.
  std::ofstream(mapping, std::ios::app) << R"(
[[layers]]
name = "SiluAndMul"
device = "cpu"
repo = "kernels-community/relu"
layer = "SiluAndMul"
lockfile = "kernels.lock"
)";
  const auto pinned = cli({"pin", "--mapping", mapping.string()});
  INFO(pinned.err);
  REQUIRE(pinned.exit_code == 0);
  const auto pins = json::parse(cli({"pin", "--list", "--json"}).out).at("repos");
  REQUIRE(pins.size() == 1);
  std::set<std::string> commits;
  for (const auto& pin : pins[0].at("pins")) {
    commits.insert(pin.at("commit").get<std::string>());
    CHECK_THAT(pin.at("source").get<std::string>(), Catch::Contains("mapping "));
  }
  // v1 (the hub entry's and the locked entry's commit) and v2.
  CHECK(commits == std::set<std::string>{lock[0].at("lock").at("commit").get<std::string>(),
                                         lock[1].at("lock").at("commit").get<std::string>()});

  // A locked entry its lockfile does not pin, and `locked = true` without a lock in force.
  std::ofstream(mapping, std::ios::app) << R"(
[[layers]]
name = "QuickGELU"
device = "cpu"
repo = "kernels-community/activation"
layer = "QuickGELU"
locked = true
)";
  const auto refused = cli({"prefetch", "--mapping", mapping.string()});
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Contains("set KERNELHUB_LOCKFILE"));
  const auto bad = cli({"prefetch", "--mapping", mapping.string(), "--version", "1"});
  CHECK(bad.exit_code == 2);
}
