#include "client/handout.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "trust/safe_path.hpp"

namespace kernelhub::client {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Blob names are etags: one component, no separators, not a dot entry.
bool is_plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos && name.size() <= 255;
}

}  // namespace

Result<UniqueFd> open_beneath(int dir_fd, std::string_view name) {
  if (!is_plain_name(name)) {
    return fail(ErrorCode::unsafe_path,
                "refusing blob name '" + trust::sanitize_for_message(name) + "'");
  }
  const std::string component(name);
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  int fd = static_cast<int>(::syscall(SYS_openat2, dir_fd, component.c_str(), &how, sizeof how));
  // ENOSYS: kernel before 5.6; EPERM: a seccomp filter that does not know openat2.
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
    fd = ::openat(dir_fd, component.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
  }
  if (fd < 0) {
    const int err = errno;
    const auto code = (err == ELOOP || err == EXDEV) ? ErrorCode::unsafe_path : ErrorCode::io;
    return fail(code, "cannot open blob " + component + ": " + errno_text(err));
  }
  return UniqueFd(fd);
}

Result<void> check_handed_fd(int fd, std::uint64_t expected_size, std::string_view what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return fail(ErrorCode::io, "fstat " + std::string(what) + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode))
    return fail(ErrorCode::unsafe_path, std::string(what) + " is not a regular file");
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) != O_RDONLY) {
    return fail(ErrorCode::unsafe_path, std::string(what) + " was not handed out read-only");
  }
  if (static_cast<std::uint64_t>(st.st_size) != expected_size) {
    return fail(ErrorCode::size_mismatch, std::string(what) + " has " + std::to_string(st.st_size) +
                                              " bytes, the manifest says " +
                                              std::to_string(expected_size));
  }
  return ok();
}

Result<std::vector<HandedFile>> open_fetched_files(const cache::KernelCache& cache,
                                                   const hub::FetchResult& result) {
  const auto blobs = cache.blobs_dir(result.repo);
  const UniqueFd blobs_fd(::open(blobs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!blobs_fd)
    return fail(ErrorCode::io, "cannot open " + blobs.string() + ": " + errno_text(errno));

  std::vector<HandedFile> files;
  files.reserve(result.files.size());
  for (const auto& file : result.files) {
    std::error_code ec;
    const auto link = result.snapshot_path / file.path;
    const auto target = std::filesystem::read_symlink(link, ec);
    if (ec)
      return fail(ErrorCode::io,
                  "cannot read snapshot link " + link.string() + ": " + ec.message());
    const auto blob = target.filename().string();
    // The snapshot and the verified manifest must name the same blob.
    if (!file.etag.empty() && blob != file.etag) {
      return fail(ErrorCode::unsafe_path,
                  link.string() + " points at " + blob + ", expected " + file.etag);
    }
    auto fd = open_beneath(blobs_fd.get(), blob);
    if (!fd) return fail(fd.error());
    KH_TRY(check_handed_fd(fd->get(), file.size, file.path));
    files.push_back(HandedFile{file.path, file.size, file.sha256, std::move(*fd)});
  }
  return files;
}

}  // namespace kernelhub::client
