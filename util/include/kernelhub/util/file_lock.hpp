// A flock(2) held for the life of the object: closing the descriptor releases it. Exclusive,
// or shared where many holders may keep something in use while an exclusive holder (one that
// would remove it) must wait or skip it.
// The one lock type for files other processes (huggingface_hub, another kernelhubd, another
// publisher) may lock too.
#pragma once

#include <filesystem>
#include <optional>

#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::util {

class FileLock {
 public:
  // Opens `path` (created with `mode`, then set to it whatever the umask: the file may be
  // shared with other users) and waits for the lock.
  static Result<FileLock> acquire(const std::filesystem::path& path, unsigned mode = 0644);
  // The same, shared: any number of shared holders at once, none beside an exclusive one.
  static Result<FileLock> acquire_shared(const std::filesystem::path& path, unsigned mode = 0644);
  // The exclusive lock if it is free now; nullopt when another holder (shared or not) has it or
  // the file cannot be opened (`create`: make it if missing, with `mode` less the umask).
  static std::optional<FileLock> try_acquire(const std::filesystem::path& path, bool create,
                                             unsigned mode = 0644);

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace kernelhub::util
