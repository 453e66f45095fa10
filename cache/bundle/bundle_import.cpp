#include "cache/bundle/bundle_import.hpp"

#include <map>
#include <optional>
#include <set>

#include "cache/blob_writer.hpp"
#include "cache/bundle/archive_handle.hpp"
#include "cache/fs_util.hpp"
#include "trust/kernel_dependency.hpp"
#include "trust/metadata.hpp"
#include "trust/safe_path.hpp"

namespace kernelhub::cache::bundle {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kChunk = 1u << 20;
constexpr std::size_t kReadBlock = 64u << 10;  // libarchive's reads from the bundle fd

Unexpected bad_archive(ErrorCode code, const std::string& why) {
  return fail(code, "bundle: " + why + "; nothing was imported");
}

// One blob of the manifest: where it goes and, once streamed, its verified temp file.
struct PlannedBlob {
  std::size_t repo = 0;
  BundledFile file;         // the first file with this etag
  bool keep_bytes = false;  // a metadata.json: kept in memory for the digest check
  std::optional<BlobWriter> writer;
  std::string bytes;
};

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

class Importer {
 public:
  Importer(const KernelCache& cache, const ImportOptions& options, BundleManifest manifest)
      : cache_(cache), options_(options), manifest_(std::move(manifest)) {}
  ~Importer() { remove_created_folders(); }
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;

  Result<void> plan();
  Result<void> stream(archive* a);
  Result<void> verify() const;
  Result<std::vector<ImportedRepo>> publish();

 private:
  Result<void> stream_entry(archive* a, archive_entry* entry, std::vector<char>& buffer);
  void remove_created_folders();

  const KernelCache& cache_;
  const ImportOptions& options_;
  BundleManifest manifest_;
  std::map<std::string, PlannedBlob> blobs_;  // by archive entry name
  std::vector<fs::path> created_;             // repo folders this import made (empty until publish)
  bool published_ = false;
};

Result<void> Importer::plan() {
  // The publisher decision for every repo, before a byte of any blob is read.
  for (const auto& repo : manifest_.repos) {
    const auto decision = trust::decide_trust(options_.policy, repo.repo.org, options_.trust_env);
    if (!decision.allowed) {
      return fail(decision.code, "bundle holds " + repo.repo.str() + ": " + decision.reason +
                                     "; nothing was imported");
    }
  }
  for (std::size_t r = 0; r < manifest_.repos.size(); ++r) {
    const auto& repo = manifest_.repos[r];
    for (const auto& file : repo.files) {
      const std::string name = blob_entry_name(repo.repo, file.etag);
      const bool is_metadata =
          file.path.ends_with("/metadata.json") && file.size <= trust::kMaxMetadataBytes;
      auto [it, inserted] = blobs_.try_emplace(name, PlannedBlob{r, file, is_metadata, {}, {}});
      if (!inserted) {
        if (it->second.file.size != file.size || it->second.file.sha256 != file.sha256) {
          return bad_archive(
              ErrorCode::malformed_response,
              repo.repo.str() + ": etag " + file.etag + " is declared with two different contents");
        }
        it->second.keep_bytes = it->second.keep_bytes || is_metadata;
      }
    }
    const fs::path folder = cache_.repo_dir(repo.repo);
    std::error_code ec;
    if (!fs::exists(folder, ec)) created_.push_back(folder);
    KH_TRY(cache_.prepare_repo(repo.repo));
  }
  return ok();
}

Result<void> Importer::stream_entry(archive* a, archive_entry* entry, std::vector<char>& buffer) {
  const char* raw = archive_entry_pathname(entry);
  const std::string name = raw != nullptr ? raw : "";
  const std::string shown = trust::sanitize_for_message(name);
  if (name.empty() || name.front() == '/' || name.find("..") != std::string::npos) {
    return bad_archive(ErrorCode::unsafe_path, "entry '" + shown + "' names a path outside it");
  }
  if (archive_entry_hardlink(entry) != nullptr) {
    return bad_archive(ErrorCode::unsafe_path, "entry '" + shown + "' is a hard link");
  }
  // A folder entry (tar of a tree writes them) creates nothing: the blobs say where they go.
  if (archive_entry_filetype(entry) == AE_IFDIR) return ok();
  if (archive_entry_filetype(entry) != AE_IFREG) {
    return bad_archive(ErrorCode::unsafe_path,
                       "entry '" + shown + "' is " + describe_type(archive_entry_filetype(entry)));
  }
  const auto planned = blobs_.find(name);
  if (planned == blobs_.end()) {
    return bad_archive(ErrorCode::malformed_response,
                       "entry '" + shown + "' is not in the bundle's manifest");
  }
  PlannedBlob& blob = planned->second;
  if (blob.writer) return bad_archive(ErrorCode::malformed_response, "entry '" + shown + "' twice");
  if (!archive_entry_size_is_set(entry) || archive_entry_size(entry) < 0 ||
      static_cast<std::uint64_t>(archive_entry_size(entry)) != blob.file.size) {
    return bad_archive(ErrorCode::size_mismatch, "entry '" + shown + "' is not " +
                                                     std::to_string(blob.file.size) +
                                                     " bytes as the manifest says");
  }
  const auto& repo = manifest_.repos[blob.repo].repo;
  BlobWriterOptions writer_options;
  writer_options.published_mode = cache_.published_blob_mode();
  auto writer = BlobWriter::create(
      cache_.blobs_dir(repo),
      ExpectedBlob{blob.file.etag,
                   blob.file.etag.size() == 64 ? DigestKind::sha256 : DigestKind::git_sha1,
                   blob.file.size},
      writer_options);
  if (!writer) return fail(writer.error());
  for (;;) {
    const la_ssize_t n = archive_read_data(a, buffer.data(), buffer.size());
    if (n < 0) return bad_archive(ErrorCode::malformed_response, shown + ": " + archive_error(a));
    if (n == 0) break;
    // The writer refuses bytes past the declared size (too_large): a bomb stops here.
    KH_TRY(writer->write(buffer.data(), static_cast<std::size_t>(n)));
    if (blob.keep_bytes) blob.bytes.append(buffer.data(), static_cast<std::size_t>(n));
  }
  if (auto finished = writer->finish(); !finished) {
    return bad_archive(finished.error().code, shown + ": " + finished.error().message);
  }
  if (writer->sha256_hex() != blob.file.sha256) {
    return bad_archive(ErrorCode::hash_mismatch, shown + " does not hash to the manifest's sha256");
  }
  blob.writer.emplace(std::move(*writer));
  return ok();
}

Result<void> Importer::stream(archive* a) {
  std::vector<char> buffer(kChunk);
  for (;;) {
    archive_entry* entry = nullptr;
    const int status = archive_read_next_header(a, &entry);
    if (status == ARCHIVE_EOF) break;
    if (status != ARCHIVE_OK) {
      return bad_archive(ErrorCode::malformed_response, "damaged archive: " + archive_error(a));
    }
    KH_TRY(stream_entry(a, entry, buffer));
  }
  for (const auto& [name, blob] : blobs_) {
    if (!blob.writer) {
      return bad_archive(ErrorCode::entry_not_found, "the archive lacks '" + name + "'");
    }
  }
  return ok();
}

Result<void> Importer::verify() const {
  for (const auto& repo : manifest_.repos) {
    for (const auto& variant : repo.variants) {
      const std::string prefix = "build/" + variant + "/";
      std::map<std::string, std::string> actual;
      const PlannedBlob* metadata = nullptr;
      for (const auto& file : repo.files) {
        if (!file.path.starts_with(prefix)) continue;
        actual[file.path.substr(prefix.size())] = file.sha256;
        if (file.path == prefix + "metadata.json") {
          metadata = &blobs_.at(blob_entry_name(repo.repo, file.etag));
        }
      }
      if (actual.empty()) {
        return bad_archive(ErrorCode::malformed_response,
                           repo.repo.str() + ": variant " + variant + " has no files");
      }
      if (metadata == nullptr) continue;  // builds before metadata.json: sizes and ids only
      auto parsed = trust::parse_kernel_metadata(metadata->bytes);
      if (!parsed) return bad_archive(parsed.error().code, prefix + parsed.error().message);
      auto verified = trust::verify_variant_digests(*parsed, actual);
      if (!verified) {
        return bad_archive(ErrorCode::hash_mismatch,
                           repo.repo.str() + " " + prefix + ": " + verified.error().message);
      }
    }
  }
  return ok();
}

Result<std::vector<ImportedRepo>> Importer::publish() {
  std::vector<ImportedRepo> out;
  DirtyDirs dirty;
  for (auto& [name, blob] : blobs_) {
    auto committed = blob.writer->commit(&dirty);
    if (!committed) return fail(committed.error());
  }
  published_ = true;  // blobs are in place: what follows only links them
  for (const auto& repo : manifest_.repos) {
    std::vector<SnapshotFile> links;
    for (const auto& file : repo.files) links.push_back({file.path, file.etag});
    KH_TRY(cache_.link_snapshot(repo.repo, repo.commit, links, &dirty));
  }
  KH_TRY(dirty.sync());
  for (const auto& repo : manifest_.repos) {
    ImportedRepo imported{repo.repo, repo.commit, repo.variants, repo.files.size(), {}, {}};
    for (const auto& ref : repo.refs) {
      // A bundle's vN is a claim, not an acceptance: refs/vN serves it offline until the Hub
      // is asked, and only a fetch from the Hub writes the version state the rollback guard
      // keeps. Where the Hub's vN was accepted, the ref stays at it.
      if (const auto version = trust::version_of_branch(ref)) {
        const auto state = cache_.read_version_state(repo.repo, *version);
        if (state && state->accepted != repo.commit) {
          imported.refs_kept.push_back(ref);
          continue;
        }
      }
      KH_TRY(cache_.write_ref(repo.repo, ref, repo.commit));
      imported.refs_written.push_back(ref);
    }
    out.push_back(std::move(imported));
  }
  return out;
}

void Importer::remove_created_folders() {
  if (published_) return;
  for (auto& [name, blob] : blobs_) blob.writer.reset();  // their temps go first
  // Only empty folders go: a download (kernelhubd runs them beside an import) or another
  // process may have published into a folder this import created, and that stays.
  for (const auto& folder : created_) {
    std::error_code ec;
    for (const char* sub : {"blobs", "refs", "snapshots"}) fs::remove(folder / sub, ec);
    fs::remove(folder, ec);
  }
}

}  // namespace

nlohmann::json imported_json(const std::vector<ImportedRepo>& repos, const KernelCache& cache) {
  auto out = nlohmann::json::array();
  for (const auto& repo : repos) {
    out.push_back({{"repo", repo.repo.str()},
                   {"commit", repo.commit},
                   {"variants", repo.variants},
                   {"files", repo.files},
                   {"refs_written", repo.refs_written},
                   {"refs_kept", repo.refs_kept},
                   {"snapshot", cache.snapshot_dir(repo.repo, repo.commit).string()}});
  }
  return out;
}

Result<std::vector<ImportedRepo>> import_bundle(int fd, const KernelCache& cache,
                                                const ImportOptions& options) {
  const ArchiveReader a(archive_read_new());
  if (!a) throw std::bad_alloc();
  // A zstd-compressed tar, or a plain one; nothing else is even tried.
  if (archive_read_support_filter_zstd(a.get()) != ARCHIVE_OK ||
      archive_read_support_format_tar(a.get()) != ARCHIVE_OK ||
      archive_read_open_fd(a.get(), fd, kReadBlock) != ARCHIVE_OK) {
    return bad_archive(ErrorCode::malformed_response,
                       "cannot read the bundle: " + archive_error(a.get()));
  }
  auto text = read_manifest_entry(a.get(), options.limits);
  if (!text) return fail(text.error());
  auto manifest = parse_manifest(*text, options.limits);
  if (!manifest) return bad_archive(manifest.error().code, manifest.error().message);
  Importer importer(cache, options, std::move(*manifest));
  KH_TRY(importer.plan());
  KH_TRY(importer.stream(a.get()));
  KH_TRY(importer.verify());
  return importer.publish();
}

}  // namespace kernelhub::cache::bundle
