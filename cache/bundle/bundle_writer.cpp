#include "kernelhub/cache/bundle/bundle_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "archive_handle.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/fs_util.hpp"

namespace kernelhub::cache::bundle {
namespace {

constexpr std::size_t kChunk = 1u << 20;

Unexpected archive_failure(archive* a, const std::string& what) {
  return fail(ErrorCode::io, "cannot write the bundle (" + what + "): " + archive_error(a));
}

Result<void> write_entry_header(archive* a, const std::string& name, std::uint64_t size) {
  const ArchiveEntry entry(archive_entry_new());
  if (!entry) throw std::bad_alloc();
  archive_entry_set_pathname(entry.get(), name.c_str());
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(size));
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), 0444);
  archive_entry_set_mtime(entry.get(), 0, 0);  // reproducible bytes for the same content
  if (archive_write_header(a, entry.get()) != ARCHIVE_OK) return archive_failure(a, name);
  return ok();
}

Result<void> write_all(archive* a, const char* data, std::size_t size, const std::string& name) {
  while (size > 0) {
    const la_ssize_t n = archive_write_data(a, data, size);
    if (n <= 0) return archive_failure(a, name);
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return ok();
}

// Streams one file from `fd` (from its start), checking its size and sha256 on the way.
Result<void> write_blob(archive* a, const std::string& name, const BundledFile& file, int fd,
                        std::vector<char>& buffer) {
  KH_TRY(write_entry_header(a, name, file.size));
  trust::Sha256 hasher;
  std::uint64_t done = 0;
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(ErrorCode::io, "cannot read " + file.path + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    if (done + static_cast<std::uint64_t>(n) > file.size) break;  // grew: caught below
    hasher.update(buffer.data(), static_cast<std::size_t>(n));
    KH_TRY(write_all(a, buffer.data(), static_cast<std::size_t>(n), name));
    done += static_cast<std::uint64_t>(n);
    offset += n;
  }
  if (done != file.size) {
    return fail(ErrorCode::size_mismatch, file.path + " has " + std::to_string(done) +
                                              " bytes in the cache, the manifest says " +
                                              std::to_string(file.size));
  }
  if (hasher.final_hex() != file.sha256) {
    return fail(ErrorCode::hash_mismatch,
                file.path +
                    " in the cache does not hash to its verified sha256; run "
                    "`kernelhub verify` and fetch it again");
  }
  return ok();
}

}  // namespace

Result<BundleStats> write_bundle(const std::filesystem::path& out,
                                 const std::vector<BundleSource>& sources, int zstd_level) {
  BundleManifest manifest;
  for (const auto& source : sources) {
    if (source.fds.size() != source.repo.files.size()) {
      return fail(ErrorCode::internal, "bundle source without one descriptor per file");
    }
    manifest.repos.push_back(source.repo);
  }
  const std::filesystem::path target = std::filesystem::absolute(out);
  // Beside the target, hidden, removed unless the whole bundle was written.
  KH_TRY_ASSIGN(auto partial, util::TempFile::create(target.parent_path(),
                                                     "." + target.filename().string() + ".", 0644));

  const ArchiveWriter a(archive_write_new());
  if (!a) throw std::bad_alloc();
  if (archive_write_add_filter_zstd(a.get()) != ARCHIVE_OK ||
      archive_write_set_filter_option(a.get(), "zstd", "compression-level",
                                      std::to_string(zstd_level).c_str()) != ARCHIVE_OK ||
      archive_write_set_format_pax_restricted(a.get()) != ARCHIVE_OK ||
      archive_write_open_fd(a.get(), partial.fd()) != ARCHIVE_OK) {
    return archive_failure(a.get(), "zstd tar");
  }
  const std::string manifest_text = to_json_text(manifest);
  KH_TRY(write_entry_header(a.get(), std::string(kManifestName), manifest_text.size()));
  KH_TRY(write_all(a.get(), manifest_text.data(), manifest_text.size(), "manifest"));

  BundleStats stats;
  std::vector<char> buffer(kChunk);
  for (const auto& source : sources) {
    std::set<std::string> written;  // a blob shared by several paths goes in once
    for (std::size_t i = 0; i < source.repo.files.size(); ++i) {
      const auto& file = source.repo.files[i];
      if (!written.insert(file.etag).second) continue;
      KH_TRY(write_blob(a.get(), blob_entry_name(source.repo.repo, file.etag), file,
                        source.fds[i].get(), buffer));
      stats.content_bytes += file.size;
      ++stats.blobs;
    }
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) return archive_failure(a.get(), "close");
  struct stat st {};
  if (::fstat(partial.fd(), &st) == 0) {
    stats.archive_bytes = static_cast<std::uint64_t>(st.st_size);
  }
  KH_TRY(partial.commit(target, std::nullopt));
  return stats;
}

}  // namespace kernelhub::cache::bundle
