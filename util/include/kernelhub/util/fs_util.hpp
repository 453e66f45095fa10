// Durable files: random temp suffixes, fsync of directories, the one temp-then-rename writer
// (TempFile, and write_file_atomic over it), folder creation, and errno -> Result mapping.
// The cache, the bundle writer and importer, the local store and the CLI write through these.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::util {

// 8 lowercase hex chars from OpenSSL's CSPRNG: process-unique temp names.
std::string random_suffix();

// io error (disk_full for ENOSPC/EDQUOT) "<what> <path>: strerror(err)".
Unexpected errno_error(int err, std::string_view what, const std::filesystem::path& path);

// Makes a rename/creation in `dir` durable.
Result<void> fsync_dir(const std::filesystem::path& dir);

// mkdir -p; disk_full when the disk is.
Result<void> make_dirs(const std::filesystem::path& dir);

// The directories whose entries one publish step changed, each fsynced once at its end: a
// rename or a mkdir survives a power cut only once the directory holding the new entry is
// synced. Directories nothing was added to are never synced (cheap warm publishes).
class DirtyDirs {
 public:
  // mkdir -p (0755 minus umask). The parent of each directory created here becomes dirty;
  // one that another process created meanwhile is theirs to sync.
  Result<void> create(const std::filesystem::path& dir);
  // An entry was renamed or created in `dir`.
  void add(const std::filesystem::path& dir);
  // fsyncs every dirty directory once; stops at the first error.
  Result<void> sync();
  std::size_t size() const { return dirs_.size(); }

 private:
  std::vector<std::filesystem::path> dirs_;
};

enum class Durability { synced, none };

// A temp file that becomes its destination on commit (a reader never sees it half written),
// or is removed when dropped. Named `<dir>/<prefix><8 hex>.tmp`, so a sweep finds leftovers;
// `dir` must be on the destination's filesystem.
class TempFile {
 public:
  // Created exclusively with `mode` (less the umask).
  static Result<TempFile> create(const std::filesystem::path& dir, std::string_view prefix,
                                 unsigned mode = 0600);
  TempFile(TempFile&& other) noexcept;
  TempFile& operator=(TempFile&&) = delete;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile();

  // For writers that stream into the descriptor themselves (libarchive).
  int fd() const { return fd_.get(); }
  Result<void> write_all(const void* data, std::size_t size);
  // fsync (Durability::none: none), chmod to `mode` when given, rename onto `dest`, then
  // fsync of `dest`'s folder.
  Result<void> commit(const std::filesystem::path& dest, std::optional<unsigned> mode,
                      Durability durability = Durability::synced);

 private:
  TempFile(UniqueFd fd, std::filesystem::path path) : fd_(std::move(fd)), path_(std::move(path)) {}
  UniqueFd fd_;
  std::filesystem::path path_;
};

// Writes `content` to `path` atomically through a TempFile beside it (`<name>.<8 hex>.tmp`),
// created with `mode` (Durability::none: no fsync, for hints whose loss costs nothing).
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               unsigned mode = 0644, Durability durability = Durability::synced);

}  // namespace kernelhub::util
