#include "kernelhub/util/fs_util.hpp"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "kernelhub/util/strings.hpp"
#include "kernelhub/util/system_error.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::util {

std::string random_suffix() {
  std::array<unsigned char, 4> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    // Only uniqueness matters here, not secrecy: fall back to pid-derived bytes.
    const auto pid = static_cast<unsigned>(::getpid());
    std::memcpy(bytes.data(), &pid, bytes.size());
  }
  return to_hex(bytes);
}

Unexpected errno_error(int err, std::string_view what, const std::filesystem::path& path) {
  const ErrorCode code = (err == ENOSPC || err == EDQUOT) ? ErrorCode::disk_full : ErrorCode::io;
  return fail(code, std::string(what) + " " + path.string() + ": " + util::errno_text(err));
}

Result<void> fsync_dir(const std::filesystem::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return errno_error(errno, "cannot open directory", dir);
  if (::fsync(fd.get()) != 0) return errno_error(errno, "cannot fsync directory", dir);
  return ok();
}

Result<void> DirtyDirs::create(const std::filesystem::path& dir) {
  // The missing tail of `dir`, made outermost first.
  std::vector<std::filesystem::path> missing;
  struct stat st {};
  for (auto p = dir; !p.empty() && ::stat(p.c_str(), &st) != 0; p = p.parent_path()) {
    if (errno != ENOENT) return errno_error(errno, "cannot stat", p);
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  std::reverse(missing.begin(), missing.end());
  for (const auto& path : missing) {
    if (::mkdir(path.c_str(), 0755) == 0) {
      add(path.parent_path());
    } else if (errno != EEXIST) {
      return errno_error(errno, "cannot create directory", path);
    }
  }
  if (::stat(dir.c_str(), &st) != 0) return errno_error(errno, "cannot stat", dir);
  if (!S_ISDIR(st.st_mode)) return errno_error(ENOTDIR, "cannot create directory", dir);
  return ok();
}

void DirtyDirs::add(const std::filesystem::path& dir) {
  if (std::find(dirs_.begin(), dirs_.end(), dir) == dirs_.end()) dirs_.push_back(dir);
}

Result<void> DirtyDirs::sync() {
  // Any order will do: the caller makes nothing point here (a ref) until all are synced.
  for (const auto& dir : dirs_) KH_TRY(fsync_dir(dir));
  dirs_.clear();
  return ok();
}

Result<void> make_dirs(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return errno_error(ec.value(), "cannot create", dir);
  return ok();
}

Result<TempFile> TempFile::create(const std::filesystem::path& dir, std::string_view prefix,
                                  unsigned mode) {
  std::filesystem::path path = dir / (std::string(prefix) + random_suffix() + ".tmp");
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd) return errno_error(errno, "cannot create", path);
  return TempFile(std::move(fd), std::move(path));
}

TempFile::TempFile(TempFile&& other) noexcept
    : fd_(std::move(other.fd_)), path_(std::exchange(other.path_, {})) {}

TempFile::~TempFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

Result<void> TempFile::write_all(const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_.get(), p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error(errno, "cannot write", path_);
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return ok();
}

Result<void> TempFile::commit(const std::filesystem::path& dest, std::optional<unsigned> mode,
                              Durability durability) {
  const bool sync = durability == Durability::synced;
  if (sync && ::fsync(fd_.get()) != 0) return errno_error(errno, "cannot fsync", path_);
  if (mode && ::fchmod(fd_.get(), *mode) != 0) return errno_error(errno, "cannot chmod", path_);
  if (::rename(path_.c_str(), dest.c_str()) != 0) return errno_error(errno, "cannot replace", dest);
  path_.clear();  // renamed: nothing left to remove
  return sync ? fsync_dir(dest.parent_path()) : ok();
}

Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               unsigned mode, Durability durability) {
  KH_TRY_ASSIGN(auto temp,
                TempFile::create(path.parent_path(), path.filename().string() + ".", mode));
  KH_TRY(temp.write_all(content.data(), content.size()));
  return temp.commit(path, std::nullopt, durability);
}

}  // namespace kernelhub::util
