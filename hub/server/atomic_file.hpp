// Temp-file-then-rename writes inside the store, so a serving process never reads a
// half-written object, commit or ref.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "trust/result.hpp"
#include "trust/unique_fd.hpp"

namespace kernelhub::hub::server {

// A temp file in `dir` (same filesystem as the destination); removed unless committed.
class TempFile {
 public:
  static Result<TempFile> create(const std::filesystem::path& dir);
  TempFile(TempFile&&) noexcept = default;
  TempFile& operator=(TempFile&&) = delete;
  TempFile(const TempFile&) = delete;
  ~TempFile();

  int fd() const { return fd_.get(); }
  const std::filesystem::path& path() const { return path_; }
  Result<void> write_all(const void* data, std::size_t size);
  // fsync, chmod, rename onto `dest`, fsync the destination directory.
  Result<void> commit(const std::filesystem::path& dest, unsigned mode);

 private:
  TempFile(UniqueFd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}
  UniqueFd fd_;
  std::filesystem::path path_;
  bool committed_ = false;
};

Result<void> write_file_atomic(const std::filesystem::path& tmp_dir,
                               const std::filesystem::path& dest, std::string_view content,
                               unsigned mode = 0644);
Result<std::string> read_small_file(const std::filesystem::path& path, std::size_t max_size);
Result<void> make_dirs(const std::filesystem::path& dir);

}  // namespace kernelhub::hub::server
