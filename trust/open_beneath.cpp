#include "kernelhub/trust/open_beneath.hpp"

#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/system_error.hpp"

namespace kernelhub {
namespace {

constexpr int kAlways = O_CLOEXEC | O_NOCTTY;

// Component by component, each opened with O_NOFOLLOW: what openat2 does for us on 5.6+.
// RESOLVE_NO_XDEV has no equivalent here; crossing a mount point is allowed.
int open_walk(int dir_fd, const std::string& relpath, int flags) {
  UniqueFd current;
  int at = dir_fd;
  std::size_t start = 0;
  for (;;) {
    const std::size_t slash = relpath.find('/', start);
    const std::string component = relpath.substr(start, slash - start);
    if (slash == std::string::npos) {
      return ::openat(at, component.c_str(), flags | kAlways | O_NOFOLLOW);
    }
    UniqueFd next(::openat(at, component.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) return -1;
    current = std::move(next);
    at = current.get();
    start = slash + 1;
  }
}

}  // namespace

Result<UniqueFd> open_beneath(int dir_fd, std::string_view relpath, int flags) {
  auto safe = trust::validate_repo_path(relpath);
  if (!safe) {
    return fail(ErrorCode::unsafe_path,
                "refusing path '" + trust::sanitize_for_message(relpath) + "'");
  }
  const std::string& path = *safe;
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | kAlways);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  int fd = static_cast<int>(::syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof how));
  // ENOSYS: kernel before 5.6; EPERM: a seccomp filter that does not know openat2.
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) fd = open_walk(dir_fd, path, flags);
  if (fd < 0) {
    const int err = errno;
    // ELOOP: a symlink (RESOLVE_NO_SYMLINKS, O_NOFOLLOW); EXDEV: escaped or crossed a mount;
    // ENOTDIR: O_NOFOLLOW|O_DIRECTORY met a symlink in the fallback walk.
    const bool refused = err == ELOOP || err == EXDEV;
    return fail(refused ? ErrorCode::unsafe_path : ErrorCode::io,
                "cannot open " + trust::sanitize_for_message(path) + ": " + util::errno_text(err));
  }
  return UniqueFd(fd);
}

}  // namespace kernelhub
