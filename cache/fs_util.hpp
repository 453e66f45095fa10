// Small POSIX helpers shared by the cache: random temp suffixes, fsync of directories,
// atomic small-file writes, and errno -> Result mapping.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "trust/result.hpp"

namespace kernelhub::cache {

// 8 lowercase hex chars from OpenSSL's CSPRNG: process-unique temp names.
std::string random_suffix();

// io error (disk_full for ENOSPC/EDQUOT) "<what> <path>: strerror(err)".
Unexpected errno_error(int err, std::string_view what, const std::filesystem::path& path);

// A disk_full error of a write into the cache at `cache_root`, told what to do: which cache
// is full and how to make room. Any other error is returned as it is.
Error explain_disk_full(Error error, const std::filesystem::path& cache_root);

// Makes a rename/creation in `dir` durable.
Result<void> fsync_dir(const std::filesystem::path& dir);

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

// Writes `content` to `path` atomically: temp in the same dir, fsync, rename, fsync of the
// dir (Durability::none: no fsync, for hints whose loss costs nothing).
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               unsigned mode = 0644, Durability durability = Durability::synced);

}  // namespace kernelhub::cache
