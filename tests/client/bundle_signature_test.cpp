// [signatures] at bundle import, in-process and through kernelhubd, with kernels signed by the
// offline test signer: enforce refuses an unsigned or tampered variant at import, before
// anything of it is published, and imports a signed one with its receipt (then served
// offline); warn imports an unsigned one with a warning and a receipt that says so.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "client/movable_hub.hpp"
#include "client/test_signer.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

namespace {

const fs::path kFolder = "kernels--kernels-community--relu";

// `tree` published as v1 of `hub` and bundled (in-process, on a cache of its own).
std::pair<fs::path, std::string> bundle_of(const MovableHub& hub, const fs::path& tree,
                                           const fs::path& dir, const std::string& name) {
  const std::string commit = hub.publish({"--branch", "v1", tree.string()});
  const fs::path bundle = dir / (name + ".tar.zst");
  const auto created = run_kernelhub(
      {"bundle", "create", bundle.string(), kMovableRepo, "--version", "1", "--variant",
       std::string(kVariant), "--cache-dir", (dir / ("cache-" + name)).string()},
      {{"HF_ENDPOINT", hub.hub->endpoint()},
       {"KERNELHUB_SOCKET", "/nonexistent.sock"},
       {"KERNELHUB_REQUIRE_DAEMON", ""}});
  INFO(created.err);
  REQUIRE(created.exit_code == 0);
  return {bundle, commit};
}

// The CLI importing into `cache` in-process with `policy`, or through a kernelhubd started
// with it.
struct Importer {
  const MovableHub& hub;
  fs::path policy;
  bool through_daemon;
  TempDir dir;
  std::unique_ptr<DaemonFixture> daemon;

  Importer(const MovableHub& hub, fs::path policy, bool through_daemon)
      : hub(hub), policy(std::move(policy)), through_daemon(through_daemon) {
    if (through_daemon) {
      daemon = std::make_unique<DaemonFixture>(
          *hub.hub, cache(), std::vector<std::string>{"--policy", this->policy.string()});
    }
  }
  fs::path cache() const { return dir.path() / "cache"; }
  MovableHubCli cli(EnvOverrides extra = {}) const {
    return {hub, through_daemon ? dir.path() / "user-cache" : cache(),
            through_daemon ? std::optional(daemon->socket()) : std::nullopt, std::move(extra)};
  }
  CommandResult run(std::vector<std::string> args, EnvOverrides extra = {}) const {
    if (!through_daemon) args.insert(args.end(), {"--policy", policy.string()});
    return cli(std::move(extra)).run(args);
  }
  CommandResult import(const fs::path& bundle) const {
    return run({"bundle", "import", bundle.string(), "--json"});
  }
  fs::path receipt(const std::string& commit) const {
    return cache() / kFolder / ".kernelhub" / "signatures" / commit /
           (std::string(kVariant) + ".json");
  }
};

}  // namespace

TEST_CASE("enforce refuses an unsigned or tampered bundle at import, a signed one imports",
          "[signatures][bundle][daemon]") {
  const Signer signer;
  MovableHub hub;
  TempDir dir;
  const auto [unsigned_bundle, unsigned_commit] =
      bundle_of(hub, kSignedReluSource, dir.path(), "unsigned");
  const auto [tampered_bundle, tampered_commit] =
      bundle_of(hub, signer.tampered_tree("tampered"), dir.path(), "tampered");
  const auto [signed_bundle, signed_commit] =
      bundle_of(hub, signer.signed_tree("signed"), dir.path(), "signed");
  const bool through_daemon = GENERATE(false, true);
  INFO((through_daemon ? "through kernelhubd" : "in-process"));
  const Importer importer(hub, signer.policy("enforce"), through_daemon);

  const auto refused = [&](const fs::path& bundle, const std::string& commit,
                           const std::string& code, const std::string& why) {
    const auto result = importer.import(bundle);
    INFO(result.err);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.err, Catch::Contains("kernelhub: " + code + ": "));
    CHECK_THAT(result.err, Catch::Contains(why));
    CHECK_THAT(result.err, Catch::Contains("[signatures] mode is enforce"));
    CHECK_THAT(result.err, Catch::Contains("nothing was imported"));
    // Refused before anything is published: no snapshot, no ref, no receipt.
    CHECK_FALSE(fs::exists(importer.cache() / kFolder / "snapshots" / commit));
    CHECK_FALSE(fs::exists(importer.cache() / kFolder / "refs" / "v1"));
    CHECK_FALSE(fs::exists(importer.receipt(commit)));
  };
  refused(unsigned_bundle, unsigned_commit, "signature_missing", "no metadata.json.sigstore");
  refused(tampered_bundle, tampered_commit, "signature_invalid", "message digest");

  const auto imported = importer.import(signed_bundle);
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  CHECK(json::parse(imported.out)[0]["signature_warnings"].empty());
  CHECK(json::parse(slurp(importer.receipt(signed_commit)))["status"] == "verified");
  // Served offline from its receipt, as enforce allows.
  const auto served = importer.run({"download", kMovableRepo, "--version", "1", "--json"},
                                   {{"HF_HUB_OFFLINE", "1"}});
  INFO(served.err);
  REQUIRE(served.exit_code == 0);
  CHECK(json::parse(served.out)["commit"] == signed_commit);
}

TEST_CASE("warn imports an unsigned bundle with a warning and its receipt",
          "[signatures][bundle][daemon]") {
  const Signer signer;
  MovableHub hub;
  TempDir dir;
  const auto [bundle, commit] = bundle_of(hub, kSignedReluSource, dir.path(), "unsigned");
  const bool through_daemon = GENERATE(false, true);
  INFO((through_daemon ? "through kernelhubd" : "in-process"));
  const Importer importer(hub, signer.policy("warn"), through_daemon);

  const auto imported = importer.import(bundle);
  INFO(imported.err);
  REQUIRE(imported.exit_code == 0);
  CHECK_THAT(imported.err, Catch::Contains("kernelhub: warning: unverified signature: "
                                           "kernels-community/relu build/"));
  CHECK_THAT(imported.err, Catch::Contains("(served: [signatures] mode is warn)"));
  CHECK(json::parse(imported.out)[0]["signature_warnings"].size() == 1);
  CHECK(json::parse(slurp(importer.receipt(commit)))["status"] == "missing");
}
