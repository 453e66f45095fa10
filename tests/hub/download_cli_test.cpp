// `kernelhub download` as a child process against an in-process HubServer: output, JSON,
// one-line errors and the documented exit codes.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/hub/fetch_fixture.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

CommandResult download(const FetchFixture& fx, std::vector<std::string> args,
                       EnvOverrides env = {}) {
  std::vector<std::string> argv{std::string(KH_BIN_DIR) + "/kernelhub", "download"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--cache-dir");
  argv.push_back(fx.cache_root.string());
  env.emplace("HF_ENDPOINT", fx.server->endpoint());
  env.emplace("KERNELHUB_RETRY_BASE_MS", "1");
  env.emplace("HF_HUB_OFFLINE", "");
  env.emplace("KERNELHUB_POLICY", "");
  env.emplace("DIFFUSERS_TRUST_REMOTE_KERNELS", "");
  env.emplace("DIFFUSERS_DISABLE_REMOTE_CODE", "");
  return run_command(argv, env);
}

}  // namespace

TEST_CASE("kernelhub download prints the variant path, or JSON with every file") {
  FetchFixture fx;
  auto plain =
      download(fx, {"kernels-community/demo-fetch", "--version", "1", "--variant", kCpuVariant});
  REQUIRE(plain.exit_code == 0);
  const auto variant_dir = fx.cache_root / "kernels--kernels-community--demo-fetch" / "snapshots" /
                           fx.commit / "build" / kCpuVariant;
  CHECK(plain.out == variant_dir.string() + "\n");

  auto json = download(fx, {"kernels-community/demo-fetch", "--revision", "main", "--torch-version",
                            "2.15", "--backend", "cpu", "--json"});
  REQUIRE(json.exit_code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["repo"] == "kernels-community/demo-fetch");
  CHECK(doc["commit"] == fx.commit);
  CHECK(doc["variant"] == kCpuVariant);
  CHECK(doc["path"] == variant_dir.string());
  CHECK(doc["files"].size() == 5);
  for (const auto& f : doc["files"]) CHECK(f["sha256"].get<std::string>().size() == 64);
}

TEST_CASE("kernelhub download reports failures on one line with a per-class exit code") {
  FetchFixture fx;
  const auto check = [](const CommandResult& r, int code, const std::string& name) {
    CHECK(r.exit_code == code);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("kernelhub: " + name + ": ", 0) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  };
  check(download(fx, {"kernels-community/demo-fetch"}), 2, "invalid_argument");
  check(download(fx, {"evil-org/demo-fetch", "--version", "1"}), 3, "untrusted_publisher");
  check(download(fx, {"kernels-community/demo-fetch", "--version", "1"},
                 {{"DIFFUSERS_DISABLE_REMOTE_CODE", "1"}}),
        3, "remote_code_disabled");
  CHECK(fx.server->requests().empty());
  check(download(fx, {"kernels-community/demo-fetch", "--version", "9"}), 4, "version_not_found");
  check(download(fx, {"kernels-community/demo-fetch", "--version", "1", "--variant", "nope"}), 5,
        "no_matching_variant");
  check(download(fx, {"kernels-community/demo-fetch", "--version", "1"}, {{"HF_HUB_OFFLINE", "1"}}),
        6, "offline_not_cached");
  hub::server::FaultPlan plan;
  plan.corrupt_one_byte = true;
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  check(download(fx, {"kernels-community/demo-fetch", "--version", "1", "--variant", kCpuVariant}),
        7, "hash_mismatch");
}
