#include "kernelhub/util/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>

#include "kernelhub/util/fs_util.hpp"

namespace kernelhub::util {

namespace {

Result<UniqueFd> lock_file(const std::filesystem::path& path, unsigned mode, int operation) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, mode));
  if (!fd) return errno_error(errno, "cannot open lock", path);
  ::fchmod(fd.get(), mode);  // like filelock: failure is harmless, the lock still works
  while (::flock(fd.get(), operation) != 0) {
    if (errno != EINTR) return errno_error(errno, "cannot lock", path);
  }
  return fd;
}

}  // namespace

Result<FileLock> FileLock::acquire(const std::filesystem::path& path, unsigned mode) {
  KH_TRY_ASSIGN(auto fd, lock_file(path, mode, LOCK_EX));
  return FileLock(std::move(fd));
}

Result<FileLock> FileLock::acquire_shared(const std::filesystem::path& path, unsigned mode) {
  KH_TRY_ASSIGN(auto fd, lock_file(path, mode, LOCK_SH));
  return FileLock(std::move(fd));
}

std::optional<FileLock> FileLock::try_acquire(const std::filesystem::path& path, bool create,
                                              unsigned mode) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), mode));
  if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return std::nullopt;
  return FileLock(std::move(fd));
}

}  // namespace kernelhub::util
