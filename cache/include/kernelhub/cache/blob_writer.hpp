// Writes one downloaded object into `blobs/` of a cache repo: bytes go to a process-unique
// temp file (`<etag>.<8hex>.incomplete`) while being hashed (inline, or for large blobs by a
// TrailingHasher thread); `finish()` checks size and digest, fsyncs and closes the temp;
// `commit()` renames it onto `blobs/<etag>` and fsyncs the directory (now, or once for many
// blobs). A finished writer holds no descriptor, however many wait for their commit.
// Until commit nothing is visible under the final name; the destructor removes the temp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache {

enum class DigestKind { sha256, git_sha1 };

// What the Hub promised for this object: the cache etag (sha256 for LFS files, git blob
// sha1 otherwise), which of the two it is, and the exact size.
struct ExpectedBlob {
  std::string etag;
  DigestKind kind = DigestKind::sha256;
  std::uint64_t size = 0;
};

struct BlobWriterOptions {
  // From this size on, hashing runs on a thread of its own (TrailingHasher) that reads the
  // bytes back from the page cache and starts their writeback early. Smaller blobs are
  // hashed inline: a thread would cost more than it saves.
  std::uint64_t trailing_hash_min_size = 4 << 20;
  // Mode the blob gets at commit, before it becomes visible under its name (0: keep the
  // 0644-minus-umask it was created with). The daemon's shared cache uses 0444.
  unsigned published_mode = 0;
};

class BlobWriter {
 public:
  static Result<BlobWriter> create(const std::filesystem::path& blobs_dir, ExpectedBlob expected,
                                   BlobWriterOptions options = {});

  BlobWriter(BlobWriter&&) noexcept;
  BlobWriter& operator=(BlobWriter&&) noexcept;
  ~BlobWriter();

  // Appends bytes. Writing past the expected size fails with too_large (endless-data
  // defence); ENOSPC fails with disk_full.
  Result<void> write(const char* data, std::size_t size);
  std::uint64_t bytes_written() const;

  // The server ignored our Range request and sent the whole body again: start over.
  Result<void> restart();
  // Bytes were appended after a resume: finish() re-hashes the whole file from disk
  // instead of trusting the incremental digest.
  void mark_resumed();

  // Verifies size and digest, applies published_mode, fsyncs and closes the temp. On
  // mismatch: hash_mismatch / size_mismatch.
  Result<void> finish();
  // sha256 (hex) of the content; valid after finish(). Used for metadata.json digests.
  const std::string& sha256_hex() const;
  const ExpectedBlob& expected() const;

  // Renames onto blobs/<etag> (same content may already be there: that is fine) and
  // fsyncs the directory, or with `dirty` leaves that to the caller's one sync for many
  // blobs (before anything refers to them). Requires finish().
  Result<std::filesystem::path> commit(util::DirtyDirs* dirty = nullptr);

 private:
  struct State;
  explicit BlobWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace kernelhub::cache
