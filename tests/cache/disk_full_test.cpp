#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernelhub/cache/blob_writer.hpp"
#include "kernelhub/trust/digest.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::cache;
namespace fs = std::filesystem;

namespace {

// Child exit codes.
constexpr int kNoMount = 77;
constexpr int kDiskFullAndClean = 0;
constexpr int kWrongOutcome = 1;

// Runs in a forked child: a private mount namespace with a 64 KiB tmpfs, then a 1 MiB blob.
int write_into_tiny_tmpfs(const fs::path& mount_point) {
  if (::unshare(CLONE_NEWNS) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return kNoMount;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return kNoMount;
  if (::mount("tmpfs", mount_point.c_str(), "tmpfs", 0, "size=64k") != 0) return kNoMount;
  const std::string content(1 << 20, 'z');
  auto w = BlobWriter::create(mount_point,
                              {trust::sha256_hex(content), DigestKind::sha256, content.size()});
  if (!w) return kWrongOutcome;
  Result<void> r;
  for (std::size_t i = 0; i < content.size() && r; i += 4096)
    r = w->write(content.data() + i, 4096);
  if (r || r.error().code != ErrorCode::disk_full) return kWrongOutcome;
  w = fail(ErrorCode::internal, "dropped");  // destroy the writer: the temp must go
  return fs::is_empty(mount_point) ? kDiskFullAndClean : kWrongOutcome;
}

}  // namespace

TEST_CASE("ENOSPC while writing a blob is disk_full and the temp is removed",
          "[cache][blob][enospc]") {
  testing::TempDir tmp;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(write_into_tiny_tmpfs(tmp.path()));
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  // Without a mount the ENOSPC path is not exercised: that is a failure, never a silent pass.
  INFO("child exit " << WEXITSTATUS(status) << " (" << kNoMount
                     << ": no permission to mount a tmpfs in a private user+mount namespace)");
  REQUIRE(WEXITSTATUS(status) != kNoMount);
  CHECK(WEXITSTATUS(status) == kDiskFullAndClean);
}
