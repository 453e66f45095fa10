// Cache integrity under stress through the real CLI: concurrent downloads of one kernel, two
// gc runs beside a download, and a cache on a full filesystem.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e/e2e_support.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

TEST_CASE("two processes downloading the same kernel at once end with one consistent snapshot",
          "[e2e][concurrency]") {
  FixtureHub hub;
  TempDir cache;
  const std::vector<std::string> args{"download",    "kernels-community/relu", "--version", "1",
                                      "--cache-dir", cache.path().string(),    "--json"};
  const EnvOverrides env{{"HF_ENDPOINT", hub.endpoint()}};
  for (int round = 0; round < 3; ++round) {
    fs::remove_all(cache.path() / "kernels--kernels-community--relu");
    auto first = std::async(std::launch::async, [&] { return run_kernelhub(args, env); });
    auto second = std::async(std::launch::async, [&] { return run_kernelhub(args, env); });
    const auto a = first.get();
    const auto b = second.get();
    INFO("round " << round << ": " << a.err << " / " << b.err);
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    const json ja = json::parse(a.out);
    const json jb = json::parse(b.out);
    CHECK(ja.at("path") == jb.at("path"));
    CHECK(ja.at("files") == jb.at("files"));

    // Every file of the snapshot resolves to a blob whose bytes hash to what was reported,
    // and nothing half-written is left behind.
    for (const auto& file : ja.at("files")) {
      const std::string rel = file.at("path");
      const fs::path link = cache.path() / "kernels--kernels-community--relu" / "snapshots" /
                            ja.at("commit").get<std::string>() / rel;
      REQUIRE(fs::is_symlink(link));
      CHECK(sha256_hex_of_file(link) == file.at("sha256").get<std::string>());
    }
    for (const auto& blob :
         fs::directory_iterator(cache.path() / "kernels--kernels-community--relu" / "blobs")) {
      CHECK(blob.path().extension() != ".incomplete");
    }
  }
}

TEST_CASE("two gc runs and a download at once lose nothing either needs",
          "[e2e][concurrency][eviction]") {
  FixtureHub hub;
  TempDir cache;
  const std::string dir = cache.path().string();
  const fs::path repo = cache.path() / "kernels--kernels-community--relu";
  const EnvOverrides env{{"HF_ENDPOINT", hub.endpoint()}};
  const auto download = [&](int version) {
    return run_kernelhub({"download", "kernels-community/relu", "--version",
                          std::to_string(version), "--cache-dir", dir, "--json"},
                         env);
  };
  const std::vector<std::string> gc{"gc", "--max-size", "1", "--cache-dir", dir, "--json"};
  for (int round = 0; round < 4; ++round) {
    REQUIRE(download(1).exit_code == 0);
    REQUIRE(download(2).exit_code == 0);
    auto first = std::async(std::launch::async, [&] { return run_kernelhub(gc, env); });
    auto second = std::async(std::launch::async, [&] { return run_kernelhub(gc, env); });
    auto fetch = std::async(std::launch::async, [&] { return download(1 + round % 2); });
    const auto a = first.get();
    const auto b = second.get();
    const auto d = fetch.get();
    INFO("round " << round << ": " << a.err << " / " << b.err << " / " << d.err);
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    // The download held the repo while it used the cache: it finished with every file
    // verified, whatever the two gc runs did around it.
    REQUIRE(d.exit_code == 0);
    CHECK(json::parse(d.out).at("files").size() > 0);
    // Whatever is left links only blobs that exist and hash to their names.
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(repo / "snapshots", ec)) {
      if (entry.is_symlink()) CHECK(fs::exists(entry.path()));
    }
    const auto verify = run_kernelhub({"verify", "--cache-dir", dir}, env);
    INFO(verify.out << verify.err);
    CHECK(verify.exit_code == 0);
  }
}

TEST_CASE("a full disk fails with a one-line disk-full reason and publishes nothing",
          "[e2e][enospc]") {
  if (geteuid() != 0 || !fs::exists("/usr/bin/unshare")) {
    WARN("needs root and unshare(1) for a private tmpfs: skipped");
    return;
  }
  FixtureHub hub;
  TempDir dir;
  const fs::path mount_point = dir.path() / "tiny";
  fs::create_directories(mount_point);
  // A private mount namespace with a 256 KiB tmpfs: big enough for the metadata and the small
  // files, too small for the kernel's .so.
  const std::string script = "mount -t tmpfs -o size=256k tmpfs '" + mount_point.string() +
                             "' && '" + kKernelhub +
                             "' download kernels-community/relu --version 1 --cache-dir '" +
                             mount_point.string() + "/cache'; rc=$?; echo '--files--' >&2; find '" +
                             mount_point.string() + "/cache' -type f -o -type l >&2; exit $rc";
  const auto result = run_command({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script},
                                  {{"HF_ENDPOINT", hub.endpoint()},
                                   {"DIFFUSERS_DISABLE_REMOTE_CODE", ""},
                                   {"DIFFUSERS_TRUST_REMOTE_KERNELS", ""}});
  INFO(result.err);
  if (result.err.find("mount:") != std::string::npos) {
    WARN("tmpfs mount not permitted here: skipped");
    return;
  }
  CHECK(result.exit_code == 8);
  const auto first_line = result.err.substr(0, result.err.find('\n'));
  CHECK(first_line.find("disk") != std::string::npos);
  // Nothing published and nothing half-written: besides the cache's tag, only the marker that
  // the repo has no kernel-status.toml (huggingface_hub's .no_exist) and the lock files under
  // .locks/ (huggingface_hub's folder for them) may be there.
  std::istringstream listing(result.err.substr(result.err.find("--files--\n") + 10));
  std::vector<std::string> files;
  for (std::string line; std::getline(listing, line);) {
    if (line.find("/.no_exist/") == std::string::npos &&
        line.find("/cache/.locks/") == std::string::npos)
      files.push_back(line);
  }
  CHECK(files == std::vector<std::string>{mount_point.string() + "/cache/CACHEDIR.TAG"});
}
