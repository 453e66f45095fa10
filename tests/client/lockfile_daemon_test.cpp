// kernels.lock through kernelhubd: `download --lockfile` is served at the locked commit from
// the daemon's cache, and a legacy lock whose variant hash does not match is refused before
// the daemon downloads anything, and again, online and offline, once the daemon holds the
// kernel under the right lock.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "client/daemon_fixture.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

namespace {

CommandResult cli(const std::vector<std::string>& args, const FixtureHub& hub,
                  const fs::path& socket, const std::string& offline = "") {
  return run_kernelhub(args, {{"HF_ENDPOINT", hub.endpoint()},
                              {"HF_HUB_CACHE", "/nonexistent/user-cache"},
                              {"KERNELS_CACHE", ""},
                              {"KERNELHUB_SOCKET", socket.string()},
                              {"KERNELHUB_REQUIRE_DAEMON", "1"},
                              {"HF_HUB_OFFLINE", offline}});
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// A project that depends on relu v1, locked through kernelhubd in the legacy format; the lock.
json lock_relu_legacy(const fs::path& dir, const FixtureHub& hub, const fs::path& socket) {
  std::ofstream(dir / "kernelhub.toml")
      << "[tool.kernels.dependencies]\n\"kernels-community/relu\" = 1\n";
  const auto locked =
      cli({"lock", dir.string(), "--format", "legacy", "-o", (dir / "legacy.lock").string()}, hub,
          socket);
  INFO(locked.err);
  REQUIRE(locked.exit_code == 0);
  return read_json(dir / "legacy.lock");
}

std::size_t blob_count(const fs::path& cache) {
  const fs::path blobs = cache / "kernels--kernels-community--relu" / "blobs";
  std::error_code ec;
  if (!fs::exists(blobs, ec)) return 0;
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(blobs), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("download --lockfile through kernelhubd: locked commits, legacy hashes checked",
          "[cli][daemon][lockfile]") {
  FixtureHub hub;
  DaemonFixture daemon(hub);
  TempDir dir;
  auto legacy = lock_relu_legacy(dir.path(), hub, daemon.socket());
  REQUIRE(legacy.size() == 1);
  const std::string commit = legacy[0]["sha"];
  REQUIRE(legacy[0]["variants"].contains(KH_FIXTURE_VARIANT));

  auto tampered = legacy;
  tampered[0]["variants"][KH_FIXTURE_VARIANT]["hash"] = "sha256-" + std::string(64, '0');
  std::ofstream(dir.path() / "tampered.lock") << tampered.dump(2);
  const std::vector<std::string> bad{"download", "--lockfile",
                                     (dir.path() / "tampered.lock").string(), "--json"};

  // Cold: refused from the tree listing, before the daemon downloads a byte.
  hub.reset_requests();
  auto refused = cli(bad, hub, daemon.socket());
  CHECK(refused.exit_code == 7);
  CHECK_THAT(refused.err, Catch::Contains("hash_mismatch") && Catch::Contains(commit));
  CHECK(blob_count(daemon.cache()) == 0);
  CHECK(hub.count("", "/resolve/" + commit + "/build/") ==
        0);  // no file of the variant was asked for

  // The right lock: served by the daemon at the locked commit.
  auto served = cli({"download", "--lockfile", (dir.path() / "legacy.lock").string(), "--json"},
                    hub, daemon.socket());
  INFO(served.err);
  REQUIRE(served.exit_code == 0);
  const auto out = json::parse(served.out);
  REQUIRE(out.size() == 1);
  CHECK(out[0]["via_daemon"] == true);
  CHECK(out[0]["commit"] == commit);
  CHECK(blob_count(daemon.cache()) > 0);

  // The kernel is in the daemon's cache and memo now: the tampered lock shares neither memo
  // nor download with the good one, and is refused against the tree again, then offline
  // against the cached blob names (no Hub request at all).
  refused = cli(bad, hub, daemon.socket());
  CHECK(refused.exit_code == 7);
  CHECK_THAT(refused.err, Catch::Contains("hash_mismatch"));
  CHECK(json::parse(refused.out).empty());  // nothing handed out
  hub.reset_requests();
  refused = cli(bad, hub, daemon.socket(), "1");
  CHECK(refused.exit_code == 7);
  CHECK_THAT(refused.err, Catch::Contains("hash_mismatch"));
  CHECK(hub.total_requests() == 0);

  // prefetch --lockfile warms the daemon's cache the same way (no descriptors).
  const auto warmed =
      cli({"prefetch", "--lockfile", (dir.path() / "legacy.lock").string(), "--json"}, hub,
          daemon.socket());
  REQUIRE(warmed.exit_code == 0);
  CHECK(json::parse(warmed.out)[0]["commit"] == commit);
  CHECK(json::parse(warmed.out)[0]["via_daemon"] == true);

  // The kernels format (no hashes) pins the same commit through the daemon.
  const auto kernels_lock = cli({"lock", dir.path().string()}, hub, daemon.socket());
  REQUIRE(kernels_lock.exit_code == 0);
  served = cli({"download", "--lockfile", (dir.path() / "kernels.lock").string(), "--json"}, hub,
               daemon.socket());
  REQUIRE(served.exit_code == 0);
  CHECK(json::parse(served.out)[0]["commit"] == commit);
}

TEST_CASE("a lock that pins a 64-hex commit fails alike in-process and through kernelhubd",
          "[cli][daemon][lockfile]") {
  FixtureHub hub;
  DaemonFixture daemon(hub);
  TempDir dir;
  auto lock = lock_relu_legacy(dir.path(), hub, daemon.socket());
  lock[0]["sha"] = std::string(64, 'a');  // a git sha256 object id: the lockfile accepts it
  std::ofstream(dir.path() / "sha256.lock") << lock.dump(2);
  const std::vector<std::string> args{"download", "--lockfile",
                                      (dir.path() / "sha256.lock").string()};

  const auto through_daemon = cli(args, hub, daemon.socket());
  const auto in_process = run_kernelhub(args, {{"HF_ENDPOINT", hub.endpoint()},
                                               {"HF_HUB_CACHE", (dir.path() / "cache").string()},
                                               {"KERNELS_CACHE", ""},
                                               {"KERNELHUB_SOCKET", "/nonexistent.sock"},
                                               {"KERNELHUB_REQUIRE_DAEMON", ""}});
  INFO("daemon: " << through_daemon.err << "in-process: " << in_process.err);
  CHECK(in_process.exit_code == 4);
  CHECK(through_daemon.exit_code == in_process.exit_code);
  CHECK_THAT(in_process.err, Catch::Contains("revision_not_found"));
  CHECK_THAT(through_daemon.err, Catch::Contains("revision_not_found"));
}
