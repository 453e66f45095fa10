// Hashes a large blob's temp file on its own thread, trailing the writer: the receive thread
// only copies bytes into the file, this thread hashes them from the page cache (mapped, else
// via pread), so hashing overlaps the download instead of throttling it. Behind itself
// it starts writeback (sync_file_range, WRITE only: no waiting) so the writer's final fsync
// finds little left. The digest covers the bytes as they are in the file.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "kernelhub/cache/blob_hash.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache {

class TrailingHasher {
 public:
  // Starts the thread; `fd` and `hash` must outlive this object. Throws std::system_error
  // when no thread can be started (callers then hash inline).
  TrailingHasher(int fd, std::filesystem::path path, BlobHash& hash);
  TrailingHasher(const TrailingHasher&) = delete;
  TrailingHasher& operator=(const TrailingHasher&) = delete;
  // Abandons the work (the hash is then partial) and joins.
  ~TrailingHasher();

  // Bytes [0, available) are in the file. Called by the writer thread only.
  void advance(std::uint64_t available);
  // Hashes everything announced, then joins: afterwards `hash` covers [0, available).
  Result<void> finish();

 private:
  void run();
  // Hashes file bytes [from, to); false (error_ set) when they cannot be read.
  bool hash_span(std::uint64_t from, std::uint64_t to, std::vector<char>& buf);
  void stop(bool abandon);

  int fd_;
  std::filesystem::path path_;
  BlobHash& hash_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::uint64_t available_ = 0;        // guarded by mutex_
  bool closing_ = false;               // guarded by mutex_
  std::atomic<bool> abandon_ = false;  // set under mutex_, polled while hashing
  std::uint64_t notified_ = 0;         // writer thread only
  std::optional<Error> error_;         // written by the thread, read after join
  std::thread thread_;
};

}  // namespace kernelhub::cache
