// KERNELHUB_LOCKFILE and set_kernel_lockfile: a hub backend is fetched at its locked commit
// (in-process and through kernelhubd), a repo the lock does not name is refused with what to
// run, and a legacy lock whose variant hash does not match is refused before dlopen.
#include <fstream>

#include <ATen/ops/randn.h>
#include <nlohmann/json.hpp>

#include "attention/hub_environment.hpp"
#include "kernelhub/attention.hpp"

// Last: c10 defines its own CHECK macro, which must not replace Catch's.
#include <catch2/catch.hpp>

namespace fs = std::filesystem;
namespace ka = kernelhub::attention;
using kernelhub::testing::HubEnvironment;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::sdpa_reference;
using kernelhub::testing::set_dispatcher_env;
using kernelhub::testing::TempDir;

namespace {

const fs::path kFlashFolder = "kernels--kernels-community--flash-attn2";

// `kernelhub lock` of a project that depends on `repo` = version, against the fixture Hub.
fs::path lock_project(const HubEnvironment& hub, const fs::path& dir, const std::string& repo,
                      int version, const std::string& format = "kernels") {
  std::ofstream(dir / "kernelhub.toml")
      << "[tool.kernels.dependencies]\n\"" << repo << "\" = " << version << "\n";
  fs::path out = dir / (format + ".lock");
  const auto result =
      kernelhub::testing::run_command({std::string(KH_BIN_DIR) + "/kernelhub", "lock", dir.string(),
                                       "--format", format, "-o", out.string()},
                                      {{"HF_ENDPOINT", hub.endpoint()}});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  return out;
}

std::string locked_commit(const fs::path& lock) {
  std::ifstream in(lock);
  const auto doc = nlohmann::json::parse(in);
  return doc[0].contains("lock") ? doc[0]["lock"]["commit"] : doc[0]["sha"];
}

void flash_hub_matches_sdpa() {
  const at::Tensor q = at::randn({1, 16, 2, 64});
  ka::AttentionOptions options;
  options.backend = "flash_hub";
  CHECK(max_abs_diff(ka::dispatch_attention(q, q, q, options), sdpa_reference(q, q, q)) <= 1e-4);
}

// The daemon, when there is one, fills the same cache directory.
void check_locked_fetch(const HubEnvironment& hub) {
  TempDir dir;
  const auto lock = lock_project(hub, dir.path(), "kernels-community/flash-attn2", 3);
  // The same lock pinning a commit the Hub does not have: the backend is unavailable, so the
  // commit in the lock is what is fetched, never what v3 names today.
  std::string text = kernelhub::testing::slurp(lock);
  const std::string commit = locked_commit(lock);
  text.replace(text.find(commit), commit.size(), std::string(40, 'e'));
  std::ofstream(dir.path() / "missing.lock") << text;
  set_dispatcher_env({{"KERNELHUB_LOCKFILE", (dir.path() / "missing.lock").string()}});
  CHECK_THROWS_WITH(ka::BackendGuard("flash_hub"), Catch::Contains(std::string(40, 'e')));
  CHECK(ka::active_backend() == "native");

  set_dispatcher_env({{"KERNELHUB_LOCKFILE", lock.string()}});
  { ka::BackendGuard guard("flash_hub"); }
  flash_hub_matches_sdpa();
  const fs::path folder = hub.cache() / kFlashFolder;
  CHECK(fs::is_directory(folder / "snapshots" / locked_commit(lock)));
  // Asked by commit, not by version: the floating ref v3 was never resolved or written.
  CHECK_FALSE(fs::exists(folder / "refs" / "v3"));
}

}  // namespace

TEST_CASE("KERNELHUB_LOCKFILE fetches a hub backend at its locked commit", "[hub][lockfile]") {
  HubEnvironment hub;
  check_locked_fetch(hub);
}

TEST_CASE("KERNELHUB_LOCKFILE pins hub backends fetched through kernelhubd",
          "[hub][lockfile][daemon]") {
  HubEnvironment hub({.with_daemon = true, .env = {}});
  check_locked_fetch(hub);
}

TEST_CASE("a hub backend whose repo the lock does not name is refused", "[hub][lockfile]") {
  HubEnvironment hub;
  TempDir dir;
  const auto lock = lock_project(hub, dir.path(), "kernels-community/relu", 1);
  ka::set_kernel_lockfile(lock.string());
  try {
    ka::BackendGuard guard("flash_hub");
    FAIL("flash_hub was activated without a lock entry");
  } catch (const ka::KernelRefused& e) {
    CHECK_THAT(e.what(), Catch::Contains("kernels-community/flash-attn2 is not in the lockfile"));
    CHECK_THAT(e.what(), Catch::Contains("kernelhub lock"));
  }
  CHECK_FALSE(fs::exists(hub.cache() / kFlashFolder));
  CHECK(ka::active_backend() == "native");
  // "" turns pinning off: the floating version is fetched.
  ka::set_kernel_lockfile("");
  { ka::BackendGuard guard("flash_hub"); }
  CHECK(fs::exists(hub.cache() / kFlashFolder / "refs" / "v3"));
}

TEST_CASE("a legacy lock whose variant hash differs is refused before anything loads",
          "[hub][lockfile][integrity]") {
  HubEnvironment hub;
  TempDir dir;
  const auto lock = lock_project(hub, dir.path(), "kernels-community/flash-attn2", 3, "legacy");
  nlohmann::json doc;
  {
    std::ifstream in(lock);
    doc = nlohmann::json::parse(in);
  }
  for (auto& [variant, entry] : doc[0]["variants"].items()) {
    entry["hash"] = "sha256-" + std::string(64, 'f');
  }
  std::ofstream(dir.path() / "tampered.lock") << doc.dump(2);
  ka::set_kernel_lockfile((dir.path() / "tampered.lock").string());
  CHECK_THROWS_AS(ka::BackendGuard("flash_hub"), ka::KernelRefused);
  CHECK_THROWS_WITH(ka::BackendGuard("flash_hub"),
                    Catch::Contains("hash_mismatch") || Catch::Contains("hashes to"));
  CHECK_FALSE(fs::exists(hub.cache() / kFlashFolder / "blobs"));
  // The untampered legacy lock loads.
  ka::set_kernel_lockfile(lock.string());
  { ka::BackendGuard guard("flash_hub"); }
  flash_hub_matches_sdpa();
}

TEST_CASE("libkernelhub verifies signatures in embedded mode with the same code",
          "[hub][signatures]") {
  TempDir dir;
  const fs::path policy = dir.path() / "policy.toml";
  std::ofstream(policy) << "[signatures]\nmode = \"enforce\"\n";
  HubEnvironment hub({.with_daemon = false, .env = {{"KERNELHUB_POLICY", policy.string()}}});
  // The fixture kernels are unsigned: refused before anything is published or loaded.
  try {
    ka::BackendGuard guard("flash_hub");
    FAIL("flash_hub was activated from an unsigned build under enforce");
  } catch (const ka::KernelRefused& e) {
    CHECK_THAT(e.what(), Catch::Contains("no metadata.json.sigstore"));
    CHECK_THAT(e.what(), Catch::Contains("[signatures] mode is enforce"));
    CHECK_THAT(e.what(), Catch::Contains("kernelhub verify-signature"));
  }
  CHECK(ka::active_backend() == "native");
  const fs::path snapshots = hub.cache() / kFlashFolder / "snapshots";
  CHECK((!fs::exists(snapshots) || fs::is_empty(snapshots)));
  // warn: served (the warning goes to stderr).
  std::ofstream(policy, std::ios::trunc) << "[signatures]\nmode = \"warn\"\n";
  { ka::BackendGuard guard("flash_hub"); }
  flash_hub_matches_sdpa();
}
