#include "kernelhub/cache/blob_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <memory>
#include <system_error>

#include "kernelhub/cache/blob_hash.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/unique_fd.hpp"
#include "trailing_hasher.hpp"

namespace kernelhub::cache {

struct BlobWriter::State {
  std::filesystem::path blobs_dir;
  std::filesystem::path temp;
  ExpectedBlob expected;
  BlobWriterOptions options;
  UniqueFd fd;
  BlobHash hash;
  std::unique_ptr<TrailingHasher> trailing;  // large blobs: hashing off the receive thread
  std::uint64_t written = 0;
  bool resumed = false;
  bool finished = false;
  bool committed = false;
  std::string sha256_hex;

  // Hashes off-thread when the blob is large enough and a thread can be had; else inline.
  void start_trailing() {
    if (expected.size < options.trailing_hash_min_size) return;
    try {
      trailing = std::make_unique<TrailingHasher>(fd.get(), temp, hash);
    } catch (const std::system_error&) {
      trailing.reset();
    }
  }
  void discard() {
    trailing.reset();  // before the fd it reads from goes away
    fd.reset();
    if (!committed && !temp.empty()) ::unlink(temp.c_str());
    temp.clear();
  }
  ~State() { discard(); }
};

BlobWriter::BlobWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
BlobWriter::BlobWriter(BlobWriter&&) noexcept = default;
BlobWriter& BlobWriter::operator=(BlobWriter&&) noexcept = default;
BlobWriter::~BlobWriter() = default;

Result<BlobWriter> BlobWriter::create(const std::filesystem::path& blobs_dir, ExpectedBlob expected,
                                      BlobWriterOptions options) {
  // The etag becomes a file name, and it came from the network.
  const std::size_t hex_len = expected.kind == DigestKind::sha256 ? 64 : 40;
  if (!trust::is_lower_hex(expected.etag, hex_len)) {
    return fail(ErrorCode::malformed_response, "etag '" + expected.etag.substr(0, 80) +
                                                   "' is not a " + std::to_string(hex_len) +
                                                   "-hex digest");
  }
  auto state = std::make_unique<State>();
  state->blobs_dir = blobs_dir;
  state->expected = std::move(expected);
  state->options = options;
  state->temp = blobs_dir / (state->expected.etag + "." + util::random_suffix() + ".incomplete");
  // 0644 before umask: the kernel applies the process umask atomically, as a chmod-from-probe
  // would in huggingface_hub; native code never ends up group/other-writable.
  state->fd.reset(::open(state->temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!state->fd) {
    const int err = errno;
    state->temp.clear();
    return util::errno_error(err, "cannot create temp blob in", blobs_dir);
  }
  if (state->expected.kind == DigestKind::git_sha1)
    state->hash.git_sha1.emplace(state->expected.size);
  state->start_trailing();
  return BlobWriter(std::move(state));
}

Result<void> BlobWriter::write(const char* data, std::size_t size) {
  State& s = *state_;
  if (s.finished || !s.fd)
    return fail(ErrorCode::internal, "write after finish on " + s.temp.string());
  if (size > s.expected.size - s.written) {  // written <= expected.size always holds
    return fail(ErrorCode::too_large, "blob " + s.expected.etag + ": more than the expected " +
                                          std::to_string(s.expected.size) + " bytes");
  }
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(s.fd.get(), data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return util::errno_error(errno, "cannot write", s.temp);
    }
    done += static_cast<std::size_t>(n);
  }
  s.written += size;
  if (s.trailing) {
    s.trailing->advance(s.written);
  } else if (!s.resumed) {  // after a resume finish() re-hashes from disk anyway
    s.hash.update(data, size);
  }
  return ok();
}

std::uint64_t BlobWriter::bytes_written() const { return state_->written; }

Result<void> BlobWriter::restart() {
  State& s = *state_;
  if (s.finished || !s.fd)
    return fail(ErrorCode::internal, "restart after finish on " + s.temp.string());
  s.trailing.reset();  // stop reading before the bytes go away
  if (::ftruncate(s.fd.get(), 0) != 0 || ::lseek(s.fd.get(), 0, SEEK_SET) != 0) {
    return util::errno_error(errno, "cannot truncate", s.temp);
  }
  s.hash.reset(s.expected.size);
  s.written = 0;
  s.resumed = false;
  s.start_trailing();
  return ok();
}

void BlobWriter::mark_resumed() {
  state_->resumed = true;
  state_->trailing.reset();  // its work is void: finish() re-hashes the whole file
}

namespace {

// Hashes the temp file's bytes from disk: after a resume the incremental state saw only
// part of the story.
Result<void> rehash(int fd, const std::filesystem::path& temp, std::uint64_t size, BlobHash& hash) {
  hash.reset(size);
  std::array<char, 1 << 16> buf{};
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return util::errno_error(errno, "cannot re-read", temp);
    }
    if (n == 0) return ok();
    hash.update(buf.data(), static_cast<std::size_t>(n));
    offset += n;
  }
}

}  // namespace

Result<void> BlobWriter::finish() {
  State& s = *state_;
  if (s.finished) return ok();
  if (!s.fd) return fail(ErrorCode::internal, "finish on a discarded blob writer");
  struct stat st {};
  if (::fstat(s.fd.get(), &st) != 0) return util::errno_error(errno, "cannot stat", s.temp);
  const auto on_disk = static_cast<std::uint64_t>(st.st_size);
  if (s.written != s.expected.size || on_disk != s.expected.size) {
    const auto got = std::to_string(on_disk);
    s.discard();
    return fail(ErrorCode::size_mismatch, "blob " + s.expected.etag + ": got " + got +
                                              " bytes, expected " +
                                              std::to_string(s.expected.size));
  }
  if (s.trailing) {
    auto trailed = s.trailing->finish();
    s.trailing.reset();
    if (!trailed) {
      s.discard();
      return fail(trailed.error());
    }
  }
  if (s.resumed) KH_TRY(rehash(s.fd.get(), s.temp, s.expected.size, s.hash));
  s.sha256_hex = s.hash.sha256.final_hex();
  const std::string actual = s.hash.git_sha1 ? s.hash.git_sha1->final_hex() : s.sha256_hex;
  if (actual != s.expected.etag) {
    s.discard();
    return fail(ErrorCode::hash_mismatch, std::string("blob ") + s.expected.etag +
                                              ": content has " +
                                              (s.hash.git_sha1 ? "git sha1 " : "sha256 ") + actual +
                                              "; refusing to publish it");
  }
  // The mode it is published with, set while the fd is still ours (fchmod, not chmod by name).
  if (s.options.published_mode != 0 && ::fchmod(s.fd.get(), s.options.published_mode) != 0) {
    return util::errno_error(errno, "cannot set the mode of", s.temp);
  }
  if (::fsync(s.fd.get()) != 0) return util::errno_error(errno, "cannot fsync", s.temp);
  // A finished blob is a closed file and a name: a publish of many blobs (a bundle of 80,000)
  // holds no descriptor per blob while it waits for the others.
  s.fd.reset();
  s.finished = true;
  return ok();
}

const std::string& BlobWriter::sha256_hex() const { return state_->sha256_hex; }
const ExpectedBlob& BlobWriter::expected() const { return state_->expected; }

Result<std::filesystem::path> BlobWriter::commit(util::DirtyDirs* dirty) {
  State& s = *state_;
  if (!s.finished)
    return fail(ErrorCode::internal, "commit before a successful finish of " + s.temp.string());
  const auto final_path = s.blobs_dir / s.expected.etag;
  if (s.committed) return final_path;
  // Replacing an existing blob is fine: same verified content, readers keep their inode.
  if (::rename(s.temp.c_str(), final_path.c_str()) != 0)
    return util::errno_error(errno, "cannot publish", final_path);
  s.committed = true;
  s.temp.clear();
  if (dirty) {
    dirty->add(s.blobs_dir);
  } else {
    KH_TRY(util::fsync_dir(s.blobs_dir));
  }
  return final_path;
}

}  // namespace kernelhub::cache
