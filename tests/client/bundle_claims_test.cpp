// A bundle's `vN` is a claim, not an acceptance: in-process and through kernelhubd (imported
// there by a non-root `import_users` member), a bundle that names as `v1` a commit the Hub
// serves only by its sha (an attacker's pull request) serves it offline before the cache
// accepted the Hub's v1 (an air-gapped host has nothing else), but the Hub's v1, once
// published, wins online and becomes the accepted commit: the bundle seeds no rollback guard,
// and imported again it moves nothing.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "client/movable_hub.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

namespace {

const fs::path kFixtureSrc = fs::path(KH_FIXTURE_HUB).parent_path() / "src";
const fs::path kFolder = "kernels--kernels-community--relu";
const std::vector<std::string> kAsNobody = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                            "--clear-groups"};

// The attacker's bundle: a commit of theirs that the Hub serves by its sha (a pull request
// to the repo is enough) but on no version branch, bundled as v1 with the real `bundle
// create`, from a mirror of the Hub where v1 names it.
std::pair<fs::path, std::string> forged_bundle(const MovableHub& hub, const fs::path& dir) {
  const std::string forged = hub.publish({"--branch", "pr-1", (kFixtureSrc / "relu-v2").string()});
  const MovableHub mirror(hub.store);
  mirror.point_v1(forged);
  const fs::path bundle = dir / "forged.tar.zst";
  const auto created = run_kernelhub(
      {"bundle", "create", bundle.string(), kMovableRepo, "--version", "1", "--variant",
       std::string(kVariant), "--cache-dir", (dir / "attacker-cache").string()},
      {{"HF_ENDPOINT", mirror.hub->endpoint()},
       {"KERNELHUB_SOCKET", "/nonexistent.sock"},
       {"KERNELHUB_REQUIRE_DAEMON", ""}});
  INFO(created.err);
  REQUIRE(created.exit_code == 0);
  ::chmod(bundle.c_str(), 0644);
  return {bundle, forged};
}

}  // namespace

TEST_CASE("a bundle's vN is a claim: offline it serves, online the Hub's v1 wins",
          "[cli][daemon][bundle][rollback]") {
  REQUIRE(::geteuid() == 0);  // imports as another uid below; CI runs as root
  MovableHub hub;
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);  // the bundle must be readable by uid 65534
  const fs::path cache = dir.path() / "cache";
  const auto made = forged_bundle(hub, dir.path());
  const fs::path bundle = made.first;
  const std::string forged = made.second;
  const bool through_daemon = GENERATE(false, true);
  INFO((through_daemon ? "through kernelhubd" : "in-process"));

  const fs::path policy = dir.path() / "policy.toml";
  std::ofstream(policy) << "[daemon]\nimport_users = [65534]\n";
  std::unique_ptr<DaemonFixture> daemon;
  if (through_daemon) {
    daemon = std::make_unique<DaemonFixture>(
        *hub.hub, cache,
        std::vector<std::string>{"--resolve-ttl", "0", "--policy", policy.string()});
    ::chmod(daemon->socket().parent_path().c_str(), 0755);
  }
  const MovableHubCli cli{hub,
                          through_daemon ? dir.path() / "user-cache" : cache,
                          through_daemon ? std::optional(daemon->socket()) : std::nullopt,
                          {}};
  const auto import = [&] {
    // Through the daemon: a member of import_users, not root.
    std::vector<std::string> argv = through_daemon ? kAsNobody : std::vector<std::string>{};
    argv.insert(argv.end(), {kKernelhub, "bundle", "import", bundle.string(), "--json"});
    const auto result = run_command(
        argv, {{"HF_ENDPOINT", hub.hub->endpoint()},
               {"HF_HUB_CACHE", cache.string()},
               {"KERNELS_CACHE", ""},
               {"KERNELHUB_SOCKET", through_daemon ? daemon->socket().string() : "/nonexistent"},
               {"KERNELHUB_REQUIRE_DAEMON", through_daemon ? "1" : ""}});
    INFO(result.err);
    REQUIRE(result.exit_code == 0);
    auto out = json::parse(result.out);
    REQUIRE(out.size() == 1);
    out[0]["stderr"] = result.err;
    return out[0];
  };
  const MovableHubCli off{hub, cli.cache, cli.socket, {{"HF_HUB_OFFLINE", "1"}}};
  const auto offline = [&] { return off.download(); };

  const auto claimed = import();
  CHECK(claimed["commit"] == forged);
  CHECK(claimed["refs_written"] == json::array({"v1"}));
  // The claim is no acceptance: nothing seeds the rollback guard.
  CHECK_FALSE(fs::exists(cache / kFolder / ".kernelhub" / "v1.json"));
  // Air-gapped, the bundle is all there is: refs/v1 serves it.
  CHECK(offline()["commit"] == forged);

  // The Hub publishes its v1: online, its answer wins, and it alone becomes the accepted one.
  const std::string real = hub.publish({"--branch", "v1", (kFixtureSrc / "relu-v1").string()});
  const auto online = cli.download();
  CHECK(online["commit"] == real);
  CHECK(online["refused_move"].is_null());
  CHECK(json::parse(slurp(cache / kFolder / ".kernelhub" / "v1.json"))["accepted"] == real);
  CHECK(offline()["commit"] == real);

  // The same bundle again moves nothing: the ref stays at the accepted commit, with a warning;
  // the forged commit stays reachable by its sha only.
  const auto again = import();
  CHECK(again["refs_written"].empty());
  CHECK(again["refs_kept"] == json::array({"v1"}));
  CHECK_THAT(again["stderr"].get<std::string>(), Catch::Contains("stays at the commit accepted"));
  CHECK(slurp(cache / kFolder / "refs" / "v1") == real);
  CHECK(offline()["commit"] == real);
  CHECK(cli.download()["commit"] == real);
}
