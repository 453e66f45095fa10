// What an import may use of the host: descriptors, bounded however many blobs the bundle
// holds. The case runs in a child with a private tmpfs as its disk: fsyncs cost nothing there.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "cache/bundle/bundle_import.hpp"
#include "tests/support/bundle_builder.hpp"
#include "tests/support/process.hpp"
#include "trust/unique_fd.hpp"

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
