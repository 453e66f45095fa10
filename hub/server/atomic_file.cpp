#include "hub/server/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace kernelhub::hub::server {
namespace {

Unexpected io_error(const std::string& what, const std::filesystem::path& path, int err) {
  return fail(err == ENOSPC ? ErrorCode::disk_full : ErrorCode::io,
              what + " " + path.string() + ": " + std::strerror(err));
}

Result<void> fsync_dir(const std::filesystem::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return io_error("cannot open directory", dir, errno);
  if (::fsync(fd.get()) != 0) return io_error("cannot fsync directory", dir, errno);
  return ok();
}

}  // namespace

Result<TempFile> TempFile::create(const std::filesystem::path& dir) {
  std::string pattern = (dir / ".tmp-XXXXXX").string();
  const int fd = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) return io_error("cannot create temp file in", dir, errno);
  return TempFile(UniqueFd(fd), std::filesystem::path(pattern));
}

TempFile::~TempFile() {
  if (!committed_ && !path_.empty()) ::unlink(path_.c_str());
}

Result<void> TempFile::write_all(const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_.get(), p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("cannot write", path_, errno);
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return ok();
}

Result<void> TempFile::commit(const std::filesystem::path& dest, unsigned mode) {
  if (::fsync(fd_.get()) != 0) return io_error("cannot fsync", path_, errno);
  if (::fchmod(fd_.get(), mode) != 0) return io_error("cannot chmod", path_, errno);
  if (::rename(path_.c_str(), dest.c_str()) != 0)
    return io_error("cannot rename onto", dest, errno);
  committed_ = true;
  return fsync_dir(dest.parent_path());
}

Result<void> write_file_atomic(const std::filesystem::path& tmp_dir,
                               const std::filesystem::path& dest, std::string_view content,
                               unsigned mode) {
  auto tmp = TempFile::create(tmp_dir);
  if (!tmp) return fail(tmp.error());
  KH_TRY(tmp->write_all(content.data(), content.size()));
  return tmp->commit(dest, mode);
}

Result<std::string> read_small_file(const std::filesystem::path& path, std::size_t max_size) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return io_error("cannot open", path, errno);
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("cannot read", path, errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_size)
      return fail(ErrorCode::too_large, path.string() + " is larger than expected");
  }
  return out;
}

Result<void> make_dirs(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(ErrorCode::io, "cannot create " + dir.string() + ": " + ec.message());
  return ok();
}

}  // namespace kernelhub::hub::server
