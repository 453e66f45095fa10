#include "trailing_hasher.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "kernelhub/util/fs_util.hpp"

namespace kernelhub::cache {
namespace {

// Wake the thread once this much is new: larger spans and no context switch per curl callback.
constexpr std::uint64_t kWakeBatch = 1 << 20;
// pread size (when mapping fails): small enough to stay in L2 between the copy and the hash.
constexpr std::size_t kReadChunk = 256 << 10;
// Mapping granularity (a multiple of any page size) and the most mapped at once.
constexpr std::uint64_t kAlign = 64 << 10;
constexpr std::uint64_t kWindow = 4 << 20;
// Start writeback of what has been hashed every this many bytes.
constexpr std::uint64_t kWritebackStep = 8 << 20;

std::uint64_t align_down(std::uint64_t n) { return n - n % kAlign; }

}  // namespace

TrailingHasher::TrailingHasher(int fd, std::filesystem::path path, BlobHash& hash)
    : fd_(fd), path_(std::move(path)), hash_(hash), thread_([this] { run(); }) {}

TrailingHasher::~TrailingHasher() { stop(true); }

void TrailingHasher::advance(std::uint64_t available) {
  {
    std::lock_guard lock(mutex_);
    available_ = available;
  }
  if (available - notified_ >= kWakeBatch) {
    notified_ = available;
    wake_.notify_one();
  }
}

Result<void> TrailingHasher::finish() {
  stop(false);
  if (error_) return fail(*error_);
  return ok();
}

void TrailingHasher::stop(bool abandon) {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
    if (abandon) abandon_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

bool TrailingHasher::hash_span(std::uint64_t from, std::uint64_t to, std::vector<char>& buf) {
  // Mapped, the bytes are hashed straight from the page cache: no copy.
  if (from % kAlign == 0) {
    void* map = ::mmap(nullptr, to - from, PROT_READ, MAP_SHARED | MAP_POPULATE, fd_,
                       static_cast<off_t>(from));
    if (map != MAP_FAILED) {
      hash_.update(map, to - from);
      ::munmap(map, to - from);
      return true;
    }
  }
  while (from < to) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), to - from));
    const ssize_t n = ::pread(fd_, buf.data(), want, static_cast<off_t>(from));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // 0: the file is shorter than what was written to it
      error_ = util::errno_error(n < 0 ? errno : EIO, "cannot re-read", path_).error;
      return false;
    }
    hash_.update(buf.data(), static_cast<std::size_t>(n));
    from += static_cast<std::uint64_t>(n);
  }
  return true;
}

void TrailingHasher::run() {
  std::vector<char> buf(kReadChunk);
  std::uint64_t hashed = 0;
  std::uint64_t written_back = 0;
  for (;;) {
    std::uint64_t target = 0;
    {
      std::unique_lock lock(mutex_);
      // Whole pages only until the writer is done, so every window can be mapped.
      wake_.wait(lock, [&] { return abandon_ || closing_ || align_down(available_) > hashed; });
      if (abandon_ || (closing_ && available_ == hashed)) return;
      target = closing_ ? available_ : align_down(available_);
    }
    while (hashed < target && !abandon_) {
      const std::uint64_t end = std::min(target, hashed + kWindow);
      if (!hash_span(hashed, end, buf)) return;
      hashed = end;
      if (hashed - written_back >= kWritebackStep) {
        // Best effort: a failure here resurfaces in the final fsync.
        ::sync_file_range(fd_, static_cast<off_t>(written_back),
                          static_cast<off_t>(hashed - written_back), SYNC_FILE_RANGE_WRITE);
        written_back = hashed;
      }
    }
  }
}

}  // namespace kernelhub::cache
