// The CLI's daemon-aware commands as child processes: download/prefetch report whether the
// daemon served them, status shows counters that move, verify finds a flipped byte, gc drops
// a snapshot no ref points to.
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "client/daemon_fixture.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

namespace {

const fs::path kRepoFolder = "kernels--kernels-community--relu";

// The CLI with its cache and socket under the test's control.
CommandResult kernelhub_cli(const std::vector<std::string>& args, const FixtureHub& hub,
                            const fs::path& user_cache, const fs::path& socket) {
  return run_kernelhub(args, {{"HF_ENDPOINT", hub.endpoint()},
                              {"HF_HUB_CACHE", user_cache.string()},
                              {"KERNELS_CACHE", ""},
                              {"KERNELHUB_SOCKET", socket.string()},
                              {"KERNELHUB_REQUIRE_DAEMON", ""}});
}

json parse_ok(const CommandResult& result) {
  INFO("stdout: " << result.out << "\nstderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  return json::parse(result.out);
}

}  // namespace

TEST_CASE("download --json says whether kernelhubd served it", "[cli][daemon]") {
  FixtureHub hub;
  TempDir dir;
  const std::vector<std::string> download{"download", "kernels-community/relu", "--version", "1",
                                          "--json"};

  SECTION("no daemon: embedded, into the user's cache") {
    const auto out =
        parse_ok(kernelhub_cli(download, hub, dir.path() / "cache", dir.path() / "none.sock"));
    CHECK(out["via_daemon"] == false);
    CHECK(fs::is_directory(dir.path() / "cache" / kRepoFolder));
  }
  SECTION("a running daemon: served from its cache, nothing in the user's") {
    DaemonFixture daemon(hub);
    const auto out = parse_ok(kernelhub_cli(download, hub, dir.path() / "cache", daemon.socket()));
    CHECK(out["via_daemon"] == true);
    CHECK(out["snapshot"].get<std::string>().rfind(daemon.cache().string(), 0) == 0);
    CHECK(out["files"].size() >= 4);
    for (const auto& file : out["files"]) {
      CHECK(file["sha256"].get<std::string>().size() == 64);
      CHECK(sha256_hex_of_file(fs::path(out["snapshot"].get<std::string>()) /
                               file["path"].get<std::string>()) == file["sha256"]);
    }
    CHECK_FALSE(fs::exists(dir.path() / "cache"));

    const auto pre =
        parse_ok(kernelhub_cli({"prefetch", "kernels-community/relu", "--version", "2", "--json"},
                               hub, dir.path() / "cache", daemon.socket()));
    REQUIRE(pre.size() == 1);
    CHECK(pre[0]["via_daemon"] == true);
    const auto ls =
        parse_ok(kernelhub_cli({"ls", "--json"}, hub, dir.path() / "cache", daemon.socket()));
    CHECK(ls["via_daemon"] == true);
    CHECK(ls["cache_dir"] == daemon.cache().string());
    REQUIRE(ls["repos"].size() == 1);
  }
}

TEST_CASE("status: embedded without a daemon, counters that move with one", "[cli][status]") {
  FixtureHub hub;
  TempDir dir;
  const auto none = dir.path() / "none.sock";

  const auto embedded = kernelhub_cli({"status"}, hub, dir.path() / "cache", none);
  CHECK(embedded.exit_code == 0);
  CHECK(embedded.out.find("no daemon: embedded mode") != std::string::npos);
  const auto required =
      kernelhub_cli({"status", "--require-daemon"}, hub, dir.path() / "cache", none);
  CHECK(required.exit_code == 6);
  CHECK(required.err.find(none.string()) != std::string::npos);

  DaemonFixture daemon(hub);
  const auto before =
      parse_ok(kernelhub_cli({"status", "--json"}, hub, dir.path() / "cache", daemon.socket()));
  CHECK(before["mode"] == "daemon");
  CHECK(before["cache_root"] == daemon.cache().string());
  parse_ok(kernelhub_cli({"download", "kernels-community/relu", "--version", "1", "--json"}, hub,
                         dir.path() / "cache", daemon.socket()));
  const auto after =
      parse_ok(kernelhub_cli({"status", "--json"}, hub, dir.path() / "cache", daemon.socket()));
  CHECK(after["counters"]["requests"].get<std::uint64_t>() >
        before["counters"]["requests"].get<std::uint64_t>());
  CHECK(after["counters"]["misses"].get<std::uint64_t>() >
        before["counters"]["misses"].get<std::uint64_t>());
  CHECK(after["counters"]["bytes_downloaded"].get<std::uint64_t>() > 0);

  const auto text = kernelhub_cli({"status"}, hub, dir.path() / "cache", daemon.socket());
  CHECK(text.exit_code == 0);
  CHECK(text.out.find(daemon.socket().string()) != std::string::npos);
  CHECK(text.out.find("requests") != std::string::npos);
}

TEST_CASE("verify finds and removes a corrupted blob in an embedded cache", "[cli][verify]") {
  FixtureHub hub;
  TempDir dir;
  const auto cache = dir.path() / "cache";
  const auto none = dir.path() / "none.sock";
  parse_ok(kernelhub_cli({"download", "kernels-community/relu", "--version", "1", "--cache-dir",
                          cache.string(), "--json"},
                         hub, cache, none));
  const auto clean = parse_ok(
      kernelhub_cli({"verify", "--cache-dir", cache.string(), "--json"}, hub, cache, none));
  CHECK(clean["corrupt"].empty());
  CHECK(clean["checked"].get<std::size_t>() >= 4);

  // Flip one byte of the largest blob (our own temp copy of the cache).
  fs::path victim;
  std::uintmax_t largest = 0;
  for (const auto& blob : fs::directory_iterator(cache / kRepoFolder / "blobs")) {
    if (blob.file_size() > largest) largest = blob.file_size(), victim = blob.path();
  }
  REQUIRE(largest > 0);
  fs::permissions(victim, fs::perms::owner_write, fs::perm_options::add);
  {
    std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(largest / 2));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(largest / 2));
    f.put(static_cast<char>(c ^ 0x5a));
  }
  const auto result =
      kernelhub_cli({"verify", "kernels-community/relu", "--cache-dir", cache.string(), "--json"},
                    hub, cache, none);
  CHECK(result.exit_code == 7);
  const auto report = json::parse(result.out);
  REQUIRE(report["corrupt"].size() == 1);
  CHECK(report["corrupt"][0]["blob"] == victim.filename().string());
  CHECK(report["corrupt"][0]["repo"] == "kernels-community/relu");
  CHECK_FALSE(fs::exists(victim));

  // The next download restores it.
  parse_ok(kernelhub_cli({"download", "kernels-community/relu", "--version", "1", "--cache-dir",
                          cache.string(), "--json"},
                         hub, cache, none));
  CHECK(fs::exists(victim));
}

TEST_CASE("gc removes a snapshot no ref points to and keeps the rest", "[cli][gc]") {
  FixtureHub hub;
  TempDir dir;
  const auto cache = dir.path() / "cache";
  const auto none = dir.path() / "none.sock";
  const auto v1 = parse_ok(kernelhub_cli({"download", "kernels-community/relu", "--version", "1",
                                          "--cache-dir", cache.string(), "--json"},
                                         hub, cache, none));
  const auto v2 = parse_ok(kernelhub_cli({"download", "kernels-community/relu", "--version", "2",
                                          "--cache-dir", cache.string(), "--json"},
                                         hub, cache, none));
  REQUIRE(v1["commit"] != v2["commit"]);

  const auto nothing =
      parse_ok(kernelhub_cli({"gc", "--cache-dir", cache.string(), "--json"}, hub, cache, none));
  CHECK(nothing["removed_snapshots"] == 0);

  fs::remove(cache / kRepoFolder / "refs" / "v1");
  const auto report =
      parse_ok(kernelhub_cli({"gc", "--cache-dir", cache.string(), "--json"}, hub, cache, none));
  CHECK(report["removed_snapshots"] == 1);
  CHECK_FALSE(fs::exists(v1["snapshot"].get<std::string>()));
  CHECK(fs::exists(v2["path"].get<std::string>()));
  for (const auto& file : v2["files"]) {
    CHECK(sha256_hex_of_file(fs::path(v2["snapshot"].get<std::string>()) /
                             file["path"].get<std::string>()) == file["sha256"]);
  }
  const auto ls =
      parse_ok(kernelhub_cli({"ls", "--cache-dir", cache.string(), "--json"}, hub, cache, none));
  REQUIRE(ls["repos"].size() == 1);
  CHECK(ls["repos"][0]["revisions"].size() == 1);
}
