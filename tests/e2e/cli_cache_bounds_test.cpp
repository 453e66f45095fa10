// The cache's bounds through the real CLI in embedded mode (no daemon): pins from a
// kernels.lock, ls's size / last use / pin columns, gc's dry run, --min-free as a percentage
// and --max-unused-age, unpin, and refusals of bad values.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "e2e/e2e_support.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

TEST_CASE("embedded pin --lockfile and gc keep the pinned kernel and evict the rest",
          "[e2e][eviction][pins]") {
  FixtureHub hub;
  TempDir dir;
  const std::string cache = (dir.path() / "cache").string();
  const fs::path repo = dir.path() / "cache" / "kernels--kernels-community--relu";
  const EnvOverrides env{{"HF_ENDPOINT", hub.endpoint()}};
  const auto cli = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--cache-dir", cache});
    return run_kernelhub(args, env);
  };
  const auto download = [&](int version) {
    const auto r = cli({"download", "kernels-community/relu", "--version", std::to_string(version),
                        "--variant", kVariant, "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out).at("commit").get<std::string>();
  };
  const std::string c1 = download(1);
  const std::string c2 = download(2);
  const auto variant_of = [&](const std::string& commit) {
    return repo / "snapshots" / commit / "build" / kVariant;
  };

  // What production runs, as `kernels lock` writes it (the kernels format lists no variants).
  const fs::path lock = dir.path() / "kernels.lock";
  std::ofstream(lock) << R"([{"dependency":{"repo-id":"kernels-community/relu","version":1},)"
                      << R"("lock":{"commit":")" << c1 << R"("}}])";
  const auto pinned = cli({"pin", "--lockfile", lock.string()});
  INFO(pinned.err);
  REQUIRE(pinned.exit_code == 0);
  const auto pins = json::parse(cli({"pin", "--list", "--json"}).out).at("repos");
  REQUIRE(pins.size() == 1);
  CHECK(pins[0].at("pins")[0].at("commit") == c1);
  CHECK(pins[0].at("pins")[0].at("variants").empty());
  CHECK_THAT(pins[0].at("pins")[0].at("source").get<std::string>(),
             Catch::Contains("kernels.lock"));

  // ls: one row per variant with its size, last use and pin.
  const auto table = cli({"ls"});
  REQUIRE(table.exit_code == 0);
  CHECK_THAT(table.out, Catch::Contains("LAST USED") && Catch::Contains("pinned"));
  const auto listed = json::parse(cli({"ls", "--json"}).out);
  for (const auto& rev : listed.at("repos")[0].at("revisions")) {
    const auto& detail = rev.at("variant_details")[0];
    CHECK(detail.at("pinned") == (rev.at("commit") == c1));
    CHECK(detail.at("last_used").get<std::int64_t>() > 0);
    CHECK(detail.at("size_bytes").get<std::uint64_t>() > 0);
  }

  // A dry run says what would go and removes nothing.
  const auto dry = cli({"gc", "--max-size", "1", "--dry-run", "--json"});
  REQUIRE(dry.exit_code == 0);
  const auto would = json::parse(dry.out);
  REQUIRE(would.at("evicted").size() == 1);
  CHECK(would.at("evicted")[0].at("commit") == c2);
  CHECK(fs::exists(variant_of(c2)));

  // No disk is 99.99 % free: every unpinned variant goes, the pinned one stays.
  const auto freed = cli({"gc", "--min-free", "99.99%", "--json"});
  INFO(freed.err);
  REQUIRE(freed.exit_code == 0);
  const auto report = json::parse(freed.out);
  CHECK(report.at("evicted").size() == 1);
  CHECK(report.at("within_bounds") == false);
  CHECK_FALSE(fs::exists(variant_of(c2)));
  CHECK(fs::exists(variant_of(c1)));

  // Unpinned, it goes too once unused for longer than the bound.
  const auto unpinned = cli({"unpin", "--lockfile", lock.string(), "--json"});
  REQUIRE(unpinned.exit_code == 0);
  CHECK(json::parse(unpinned.out).at("removed") == 1);
  const auto aged = cli({"gc", "--max-unused-age", "0s", "--json"});
  REQUIRE(aged.exit_code == 0);
  CHECK(json::parse(aged.out).at("evicted").size() == 1);
  CHECK_FALSE(fs::exists(variant_of(c1)));
  CHECK(run_kernelhub({"verify", "--cache-dir", cache}, env).exit_code == 0);

  // Bad values are usage errors that name the flag's format.
  const auto bad = cli({"gc", "--max-size", "lots"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("invalid_argument") && Catch::Contains("GiB"));
  CHECK(cli({"pin", "kernels-community/relu"}).exit_code == 2);  // what to pin is missing
}
