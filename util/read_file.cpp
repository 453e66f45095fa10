#include "kernelhub/util/read_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "kernelhub/util/printable.hpp"
#include "kernelhub/util/system_error.hpp"

namespace kernelhub::util {
namespace {

std::string shown(const std::filesystem::path& path) { return printable(path.string()); }

Unexpected too_large(const std::filesystem::path& path, std::size_t size, std::size_t max_bytes,
                     bool at_least) {
  return fail(ErrorCode::too_large, shown(path) + " is " + (at_least ? "over " : "") +
                                        std::to_string(size) + " bytes, more than the " +
                                        std::to_string(max_bytes) + "-byte limit");
}

}  // namespace

std::string_view file_type_name(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

Result<struct stat> require_regular_fd(int fd, std::string_view what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return fail(ErrorCode::io, "cannot stat " + std::string(what) + ": " + errno_text(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(ErrorCode::invalid_argument, std::string(what) + " is " +
                                                 std::string(file_type_name(st.st_mode)) +
                                                 ", not a regular file");
  }
  return st;
}

Result<UniqueFd> open_regular_file(const std::filesystem::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) return fail(ErrorCode::io, "cannot open " + shown(path) + ": " + errno_text(errno));
  KH_TRY(require_regular_fd(fd.get(), shown(path)));
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return fail(ErrorCode::io, "cannot use " + shown(path) + ": " + errno_text(errno));
  }
  return fd;
}

Result<std::string> read_small_file(const std::filesystem::path& path, std::size_t max_bytes) {
  KH_TRY_ASSIGN(auto fd, open_regular_file(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return fail(ErrorCode::io, "cannot stat " + shown(path) + ": " + errno_text(errno));
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > max_bytes) return too_large(path, size, max_bytes, false);
  // One byte more than fstat said tells a file that grew since (or a /proc file, whose size
  // reads 0) from one that did not.
  std::string text(size + 1, '\0');
  std::size_t done = 0;
  for (;;) {
    if (done == text.size()) {
      if (done > max_bytes) return too_large(path, max_bytes, max_bytes, true);
      text.resize(std::min(std::max(text.size() * 2, std::size_t{4096}), max_bytes + 1));
    }
    const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(ErrorCode::io, "cannot read " + shown(path) + ": " + errno_text(errno));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  return text;
}

}  // namespace kernelhub::util
