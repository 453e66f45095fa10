#include "import_entry.hpp"

#include <algorithm>

#include "archive_handle.hpp"
#include "kernelhub/cache/blob_hash.hpp"
#include "kernelhub/trust/metadata.hpp"

namespace kernelhub::cache::bundle {

std::string describe_type(mode_t type) {
  switch (type) {
    case AE_IFLNK:
      return "a symlink";
    case AE_IFDIR:
      return "a directory";
    case AE_IFCHR:
    case AE_IFBLK:
      return "a device";
    case AE_IFIFO:
      return "a FIFO";
    case AE_IFSOCK:
      return "a socket";
    default:
      return "not a regular file";
  }
}

Result<std::string> read_manifest_entry(archive* a, const BundleLimits& limits) {
  archive_entry* entry = nullptr;
  const int status = archive_read_next_header(a, &entry);
  if (status != ARCHIVE_OK) {
    return bad_archive(ErrorCode::malformed_response,
                       "not a kernelhub bundle (.tar.zst): " + archive_error(a));
  }
  const char* name = archive_entry_pathname(entry);
  if (name == nullptr || std::string_view(name) != kManifestName ||
      archive_entry_filetype(entry) != AE_IFREG) {
    return bad_archive(ErrorCode::malformed_response,
                       "the first entry must be " + std::string(kManifestName));
  }
  if (!archive_entry_size_is_set(entry) || archive_entry_size(entry) < 0 ||
      static_cast<std::uint64_t>(archive_entry_size(entry)) > limits.max_manifest_bytes) {
    return bad_archive(
        ErrorCode::too_large,
        "the manifest is larger than " + std::to_string(limits.max_manifest_bytes >> 20) + " MiB");
  }
  std::string text(static_cast<std::size_t>(archive_entry_size(entry)), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const la_ssize_t n = archive_read_data(a, text.data() + done, text.size() - done);
    if (n < 0) return bad_archive(ErrorCode::malformed_response, archive_error(a));
    if (n == 0) return bad_archive(ErrorCode::size_mismatch, "the manifest is truncated");
    done += static_cast<std::size_t>(n);
  }
  return text;
}

Result<void> stream_blob(archive* a, PlannedBlob& blob, const std::string& shown,
                         const KernelCache& cache, const trust::RepoId& repo,
                         std::vector<char>& buffer) {
  const ExpectedBlob expected{
      blob.file.etag, blob.file.etag.size() == 64 ? DigestKind::sha256 : DigestKind::git_sha1,
      blob.file.size};
  std::optional<BlobWriter> writer;
  BlobHash hash;  // a blob the cache holds: its bytes are only hashed
  if (blob.in_cache) {
    if (expected.kind == DigestKind::git_sha1) hash.git_sha1.emplace(expected.size);
  } else {
    BlobWriterOptions writer_options;
    writer_options.published_mode = cache.published_blob_mode();
    KH_TRY_ASSIGN(auto created,
                  BlobWriter::create(cache.blobs_dir(repo), expected, writer_options));
    writer.emplace(std::move(created));
  }
  const std::size_t keep_cap = trust::kMaxMetadataBytes + 1;
  std::uint64_t read = 0;
  for (;;) {
    const la_ssize_t n = archive_read_data(a, buffer.data(), buffer.size());
    if (n < 0) return bad_archive(ErrorCode::malformed_response, shown + ": " + archive_error(a));
    if (n == 0) break;
    const auto size = static_cast<std::size_t>(n);
    read += size;
    if (writer) {
      // The writer refuses bytes past the declared size (too_large): a bomb stops here.
      KH_TRY(writer->write(buffer.data(), size));
    } else if (read > expected.size) {
      return bad_archive(ErrorCode::too_large, shown + " is longer than the manifest says");
    } else {
      hash.update(buffer.data(), size);
    }
    if (blob.keep_bytes && blob.bytes.size() < keep_cap) {
      blob.bytes.append(buffer.data(), std::min(size, keep_cap - blob.bytes.size()));
    }
  }
  std::string sha256;
  if (writer) {
    if (auto finished = writer->finish(); !finished) {
      return bad_archive(finished.error().code, shown + ": " + finished.error().message);
    }
    sha256 = writer->sha256_hex();
  } else {
    if (read != expected.size) {
      return bad_archive(ErrorCode::size_mismatch, shown + " is shorter than the manifest says");
    }
    sha256 = hash.sha256.final_hex();
    const std::string id = hash.git_sha1 ? hash.git_sha1->final_hex() : sha256;
    if (id != expected.etag) {
      return bad_archive(ErrorCode::hash_mismatch, shown + " does not hash to its etag");
    }
  }
  if (sha256 != blob.file.sha256) {
    return bad_archive(ErrorCode::hash_mismatch, shown + " does not hash to the manifest's sha256");
  }
  // Closed since finish(): thousands of streamed blobs wait for the publish without a
  // descriptor each.
  blob.writer = std::move(writer);
  blob.streamed = true;
  return ok();
}

}  // namespace kernelhub::cache::bundle
