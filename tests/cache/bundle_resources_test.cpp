// What an import may use of the host: descriptors (bounded, however many blobs the bundle
// holds) and disk (what the manifest declares for the blobs the cache lacks is checked
// against the cache's free space before a byte is streamed; blobs it holds are not written
// again). Each case runs in a child with a private tmpfs as its disk: fsyncs cost nothing
// there, and its size is the disk that fills.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "kernelhub/cache/bundle/bundle_import.hpp"
#include "kernelhub/util/unique_fd.hpp"
#include "support/bundle_builder.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace kernelhub;
using namespace kernelhub::cache;
using namespace kernelhub::cache::bundle;
using kernelhub::testing::TempDir;
using nlohmann::json;

namespace {

const std::string kCommit = "89abcdef0123456789abcdef0123456789abcdef";
const std::string kVariant = "torch215-cxx11-cpu-x86_64-linux";
const trust::RepoId kRepo{"kernels-community", "many"};
constexpr int kNoMount = 77;

// Runs `body` in a forked child, in a private mount namespace where a fresh tmpfs of `size`
// is mounted at `mount_point`; returns what `body` returned. No Catch assertion runs in the
// child. Without a mount the case is not exercised: that fails, never passes silently.
json in_tmpfs(const fs::path& mount_point, const std::string& size,
              const std::function<json()>& body) {
  fs::create_directories(mount_point);
  const fs::path report = mount_point.string() + ".report";
  fs::remove(report);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      ::_exit(kNoMount);
    }
    const std::string options = "size=" + size;
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      ::_exit(kNoMount);
    }
    json outcome;
    try {
      outcome = body();
    } catch (const std::exception& e) {
      outcome = {{"exception", e.what()}};
    }
    std::ofstream(report) << outcome.dump();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  INFO("child exit " << WEXITSTATUS(status) << " (" << kNoMount
                     << ": no permission to mount a tmpfs in a private mount namespace)");
  REQUIRE(WEXITSTATUS(status) == 0);
  return json::parse(testing::slurp(report));
}

json outcome_of(const Result<std::vector<ImportedRepo>>& imported) {
  if (imported) return {{"ok", true}, {"repos", imported->size()}};
  return {{"ok", false},
          {"code", std::string(to_string(imported.error().code))},
          {"message", imported.error().message}};
}

json import_path(const fs::path& bundle, const KernelCache& cache) {
  const UniqueFd fd(::open(bundle.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {{"ok", false}, {"code", "open"}};
  return outcome_of(import_bundle(fd.get(), cache, {}));
}

std::uint64_t used_bytes(const fs::path& path) {
  struct statvfs vfs {};
  ::statvfs(path.c_str(), &vfs);
  return static_cast<std::uint64_t>(vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize;
}

// Every entry under the cache (blobs, links, refs, folders), for "nothing was left".
json entries_under(const fs::path& root) {
  json out = json::array();
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    out.push_back(it->path().lexically_relative(root).string());
  }
  return out;
}

}  // namespace

TEST_CASE("a bundle of 1,500 blobs imports under a 256-descriptor limit", "[bundle][fds]") {
  TempDir dir;
  const fs::path bundle = dir.path() / "many.tar.zst";
  testing::write_repo_bundle(bundle, kRepo, kCommit, {"v1"}, {kVariant},
                             testing::numbered_files(kVariant, 1500));
  const fs::path disk = dir.path() / "disk";
  const auto outcome = in_tmpfs(disk, "64m", [&] {
    const KernelCache cache(disk / "cache");
    const UniqueFd fd(::open(bundle.c_str(), O_RDONLY | O_CLOEXEC));
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = 256;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    json out = outcome_of(import_bundle(fd.get(), cache, {}));
    out["last"] =
        testing::slurp(cache.snapshot_dir(kRepo, kCommit) / "build" / kVariant / "m1499.py");
    return out;
  });
  INFO(outcome.dump());
  CHECK(outcome["ok"] == true);
  CHECK(outcome["last"] == "x = 1499\n");
}

TEST_CASE("an import that cannot fit is refused before a byte is streamed", "[bundle][enospc]") {
  TempDir dir;
  const fs::path disk = dir.path() / "disk";
  const std::string big_path = "build/" + kVariant + "/_big.abi3.so";
  const std::string big(2u << 20, '\x5a');  // 2 MiB on a 1 MiB disk
  const fs::path too_big = dir.path() / "too-big.tar.zst";
  testing::write_repo_bundle(too_big, kRepo, kCommit, {"v1"}, {kVariant}, {{big_path, big}});
  // The same manifest without its blobs: an importer that streamed first would find the blob
  // missing; this one never gets that far.
  const fs::path manifest_only = dir.path() / "manifest-only.tar.zst";
  {
    BundledRepo repo{kRepo, kCommit, {"v1"}, {kVariant}, {}};
    repo.files.push_back({big_path, big.size(), trust::sha256_hex(big), trust::sha256_hex(big)});
    testing::ArchiveBuilder builder(manifest_only);
    builder.manifest({{repo}});
    builder.close();
  }
  for (const auto& bundle : {too_big, manifest_only}) {
    INFO(bundle.filename());
    const auto outcome = in_tmpfs(disk, "1m", [&] {
      const KernelCache cache(disk / "cache");
      json out = import_path(bundle, cache);
      out["left"] = entries_under(disk / "cache" / "kernels--kernels-community--many");
      out["used"] = used_bytes(disk);
      return out;
    });
    INFO(outcome.dump());
    CHECK(outcome["code"] == "disk_full");
    const std::string message = outcome.value("message", "");
    CHECK_THAT(message, Catch::Contains("the cache " + (disk / "cache").string() + " has"));
    CHECK_THAT(message, Catch::Contains("need 2.0 MiB"));
    CHECK_THAT(message, Catch::Contains("nothing was imported"));
    CHECK(outcome["left"].empty());
    CHECK(outcome["used"] == 0);
  }
}

TEST_CASE("blobs the cache holds need no room: a bundle imported again fits", "[bundle][enospc]") {
  TempDir dir;
  const fs::path disk = dir.path() / "disk";
  const fs::path bundle = dir.path() / "b.tar.zst";
  // 600 KiB on a 1 MiB disk: once fits, twice (a temp beside the blob) would not.
  const std::string so(600u << 10, '\x33');
  testing::write_repo_bundle(bundle, kRepo, kCommit, {"v1"}, {kVariant},
                             {{"build/" + kVariant + "/_k.abi3.so", so},
                              {"build/" + kVariant + "/__init__.py", "import torch\n"}});
  const auto outcome = in_tmpfs(disk, "1m", [&] {
    const KernelCache cache(disk / "cache");
    return json{{"first", import_path(bundle, cache)}, {"second", import_path(bundle, cache)}};
  });
  INFO(outcome.dump());
  CHECK(outcome["first"]["ok"] == true);
  CHECK(outcome["second"]["ok"] == true);
}
