// Both hand-out paths, embedded and kernelhubd, go through cache::open_handout: a blob
// replaced by a symlink in either cache is refused as unsafe_path, never followed.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "client/daemon_fixture.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

namespace {

const fs::path kRepoFolder = "kernels--kernels-community--relu";

CommandResult download(const FixtureHub& hub, const fs::path& cache, const fs::path& socket,
                       bool offline) {
  return run_kernelhub({"download", "kernels-community/relu", "--version", "1", "--json"},
                       {{"HF_ENDPOINT", hub.endpoint()},
                        {"HF_HUB_CACHE", cache.string()},
                        {"KERNELS_CACHE", ""},
                        {"KERNELHUB_SOCKET", socket.string()},
                        {"KERNELHUB_REQUIRE_DAEMON", ""},
                        {"HF_HUB_OFFLINE", offline ? "1" : ""}});
}

// Replaces the blob of the variant's .so under `repo_dir` with a symlink to a copy of it.
void symlink_the_so_blob(const fs::path& repo_dir, const json& fetched) {
  for (const auto& file : fetched.at("files")) {
    const auto path = file.at("path").get<std::string>();
    if (!path.ends_with(".so")) continue;
    const fs::path blob = repo_dir / "blobs" / file.at("sha256").get<std::string>();
    REQUIRE(fs::is_regular_file(fs::symlink_status(blob)));
    fs::copy_file(blob, repo_dir / "elsewhere.so");
    fs::remove(blob);
    fs::create_symlink(repo_dir / "elsewhere.so", blob);
    return;
  }
  FAIL("no .so in " << fetched.dump());
}

}  // namespace

TEST_CASE("a symlinked blob is refused by the embedded and the daemon hand-out alike",
          "[cli][daemon][handout]") {
  FixtureHub hub;
  TempDir dir;
  SECTION("embedded: the user's cache") {
    const auto cache = dir.path() / "cache";
    const auto first = download(hub, cache, dir.path() / "none.sock", false);
    INFO(first.err);
    REQUIRE(first.exit_code == 0);
    const auto fetched = json::parse(first.out);
    REQUIRE(fetched.at("via_daemon") == false);
    symlink_the_so_blob(cache / kRepoFolder, fetched);
    const auto again = download(hub, cache, dir.path() / "none.sock", true);
    INFO(again.out << again.err);
    CHECK(again.exit_code != 0);
    CHECK_THAT(again.err, Catch::Contains("unsafe_path"));
  }
  SECTION("kernelhubd: its shared cache") {
    DaemonFixture daemon(hub);
    const auto first = download(hub, dir.path() / "cache", daemon.socket(), false);
    INFO(first.err);
    REQUIRE(first.exit_code == 0);
    const auto fetched = json::parse(first.out);
    REQUIRE(fetched.at("via_daemon") == true);
    symlink_the_so_blob(daemon.cache() / kRepoFolder, fetched);
    const auto again = download(hub, dir.path() / "cache", daemon.socket(), false);
    INFO(again.out << again.err);
    CHECK(again.exit_code != 0);
    CHECK_THAT(again.err, Catch::Contains("unsafe_path"));
  }
}
