// The daemon's instance lock: under .locks/ (which huggingface_hub's cache scan skips), one
// holder at a time, and the root `.kernelhubd.lock` of earlier builds still respected while
// an old daemon holds it, removed when free.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fstream>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/util/unique_fd.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::cache;
namespace fs = std::filesystem;

TEST_CASE("the instance lock lives under .locks/ and has one holder", "[cache][instance-lock]") {
  testing::TempDir tmp;
  const KernelCache cache(tmp.path() / "cache");
  auto first = cache.try_lock_instance();
  REQUIRE(first);
  CHECK(fs::is_regular_file(tmp.path() / "cache" / ".locks" / "kernelhubd.lock"));
  CHECK(!fs::exists(tmp.path() / "cache" / ".kernelhubd.lock"));
  CHECK(!cache.try_lock_instance());  // flock is per open file: a second opener is refused
  first.reset();
  CHECK(cache.try_lock_instance());  // released with its holder
}

TEST_CASE("a free root .kernelhubd.lock of an earlier build is removed", "[cache][instance-lock]") {
  testing::TempDir tmp;
  const fs::path root = tmp.path() / "cache";
  fs::create_directories(root);
  std::ofstream(root / ".kernelhubd.lock").flush();
  const KernelCache cache(root);
  CHECK(cache.try_lock_instance());
  CHECK(!fs::exists(root / ".kernelhubd.lock"));
}

TEST_CASE("a held root .kernelhubd.lock means another kernelhubd serves the cache",
          "[cache][instance-lock]") {
  testing::TempDir tmp;
  const fs::path root = tmp.path() / "cache";
  fs::create_directories(root);
  // What an older kernelhubd does at start-up.
  const UniqueFd old(
      ::open((root / ".kernelhubd.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  REQUIRE(old);
  REQUIRE(::flock(old.get(), LOCK_EX | LOCK_NB) == 0);
  const KernelCache cache(root);
  CHECK(!cache.try_lock_instance());
  CHECK(fs::exists(root / ".kernelhubd.lock"));      // left to its holder
  CHECK(cache.try_lock_instance() == std::nullopt);  // and the new lock was not kept either
}
