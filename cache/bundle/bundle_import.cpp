#include "kernelhub/cache/bundle/bundle_import.hpp"

#include <map>
#include <optional>

#include "archive_handle.hpp"
#include "import_checks.hpp"
#include "import_entry.hpp"
#include "import_transaction.hpp"
#include "kernelhub/trust/kernel_dependency.hpp"
#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/fs_util.hpp"

namespace kernelhub::cache::bundle {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kChunk = 1u << 20;
constexpr std::size_t kReadBlock = 64u << 10;  // libarchive's reads from the bundle fd

constexpr std::string_view kSignatureFile = "metadata.json.sigstore";

bool kept_in_memory(const std::string& path) {
  return path.ends_with("/metadata.json") || path.ends_with("/" + std::string(kSignatureFile));
}

class Importer {
 public:
  Importer(const KernelCache& cache, const ImportOptions& options, BundleManifest manifest)
      : cache_(cache), options_(options), manifest_(std::move(manifest)), tx_(cache) {}
  ~Importer() { remove_created_folders(); }
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;

  Result<void> plan();
  Result<void> stream(archive* a);
  Result<void> verify();
  Result<std::vector<ImportedRepo>> publish();

 private:
  Result<void> plan_blobs();
  Result<void> stream_entry(archive* a, archive_entry* entry, std::vector<char>& buffer);
  // [signatures]: the check for build/<variant>/ of `repo`, its receipt kept for the publish.
  Result<void> check_signature(std::size_t repo_index, const std::string& variant,
                               const PlannedBlob* metadata);
  const PlannedBlob* blob_at(const BundledRepo& repo, const std::string& path) const;
  void remove_created_folders();

  const KernelCache& cache_;
  const ImportOptions& options_;
  BundleManifest manifest_;
  std::vector<util::FileLock> held_;          // KernelCache::hold_repo of every repo in the bundle
  std::map<std::string, PlannedBlob> blobs_;  // by archive entry name
  std::vector<fs::path> created_;             // repo folders this import made (empty until publish)
  // Per repo: (variant, receipt) to write, and the warnings of warn mode.
  std::vector<std::vector<std::pair<std::string, std::string>>> receipts_;
  std::vector<std::vector<std::string>> warnings_;
  ImportTransaction tx_;  // a failed publish is taken back (remove_created_folders) first
  bool published_ = false;
};

Result<void> Importer::plan_blobs() {
  std::vector<std::uint64_t> new_sizes;
  for (std::size_t r = 0; r < manifest_.repos.size(); ++r) {
    const auto& repo = manifest_.repos[r];
    KH_TRY(check_snapshot_unchanged(cache_, repo));
    for (const auto& file : repo.files) {
      const std::string name = blob_entry_name(repo.repo, file.etag);
      const bool keep = kept_in_memory(file.path);
      auto [it, inserted] =
          blobs_.try_emplace(name, PlannedBlob{r, file, keep, false, false, {}, {}});
      if (!inserted) {
        if (it->second.file.size != file.size || it->second.file.sha256 != file.sha256) {
          return bad_archive(
              ErrorCode::malformed_response,
              repo.repo.str() + ": etag " + file.etag + " is declared with two different contents");
        }
        it->second.keep_bytes = it->second.keep_bytes || keep;
        continue;
      }
      // A blob the cache holds intact is hashed on its way through, never written again.
      it->second.in_cache = has_intact_blob(cache_, repo.repo, file);
      if (!it->second.in_cache) new_sizes.push_back(file.size);
    }
  }
  return check_free_space(cache_, new_sizes);
}

Result<void> Importer::plan() {
  // The publisher decision for every repo, before a byte of any blob is read.
  for (const auto& repo : manifest_.repos) {
    const auto decision = trust::decide_trust(options_.policy, repo.repo.org, options_.trust_env);
    if (!decision.allowed) {
      return fail(decision.code, "bundle holds " + repo.repo.str() + ": " + decision.reason +
                                     "; nothing was imported");
    }
  }
  // Held until the import is done: no eviction or gc takes a cached blob this import keeps,
  // or one it has committed and not linked yet.
  for (const auto& repo : manifest_.repos) {
    KH_TRY_ASSIGN(auto held, cache_.hold_repo(repo.repo));
    held_.push_back(std::move(held));
  }
  KH_TRY(plan_blobs());
  for (const auto& repo : manifest_.repos) {
    const fs::path folder = cache_.repo_dir(repo.repo);
    std::error_code ec;
    if (!fs::exists(folder, ec)) created_.push_back(folder);
    KH_TRY(cache_.prepare_repo(repo.repo));
  }
  receipts_.resize(manifest_.repos.size());
  warnings_.resize(manifest_.repos.size());
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
  if (blob.streamed)
    return bad_archive(ErrorCode::malformed_response, "entry '" + shown + "' twice");
  if (!archive_entry_size_is_set(entry) || archive_entry_size(entry) < 0 ||
      static_cast<std::uint64_t>(archive_entry_size(entry)) != blob.file.size) {
    return bad_archive(ErrorCode::size_mismatch, "entry '" + shown + "' is not " +
                                                     std::to_string(blob.file.size) +
                                                     " bytes as the manifest says");
  }
  return stream_blob(a, blob, shown, cache_, manifest_.repos[blob.repo].repo, buffer);
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
    if (!blob.streamed) {
      return bad_archive(ErrorCode::entry_not_found, "the archive lacks '" + name + "'");
    }
  }
  return ok();
}

const PlannedBlob* Importer::blob_at(const BundledRepo& repo, const std::string& path) const {
  for (const auto& file : repo.files) {
    if (file.path == path) return &blobs_.at(blob_entry_name(repo.repo, file.etag));
  }
  return nullptr;
}

Result<void> Importer::check_signature(std::size_t repo_index, const std::string& variant,
                                       const PlannedBlob* metadata) {
  const auto& repo = manifest_.repos[repo_index];
  const std::string prefix = "build/" + variant + "/";
  const PlannedBlob* signature = blob_at(repo, prefix + std::string(kSignatureFile));
  const std::optional<std::string> bundle =
      signature ? std::optional<std::string>(signature->bytes) : std::nullopt;
  const std::string etag = metadata ? metadata->file.etag : std::string();
  const std::string_view text = metadata ? std::string_view(metadata->bytes) : std::string_view();
  // Bound to each version the bundle claims for the commit (a fetch binds the requested one).
  std::vector<int> versions;
  for (const auto& ref : repo.refs) {
    if (const auto version = trust::version_of_branch(ref); version && *version <= 1'000'000) {
      versions.push_back(static_cast<int>(*version));
    }
  }
  auto verdict = options_.signature_check(repo.repo, versions, variant, etag, text, bundle);
  if (!verdict) return bad_archive(verdict.error().code, verdict.error().message);
  for (auto& warning : verdict->warnings) warnings_[repo_index].push_back(std::move(warning));
  receipts_[repo_index].emplace_back(variant, std::move(verdict->receipt));
  return ok();
}

Result<void> Importer::verify() {
  for (std::size_t r = 0; r < manifest_.repos.size(); ++r) {
    const auto& repo = manifest_.repos[r];
    for (const auto& variant : repo.variants) {
      const std::string prefix = "build/" + variant + "/";
      std::map<std::string, std::string> actual;
      for (const auto& file : repo.files) {
        if (file.path.starts_with(prefix)) actual[file.path.substr(prefix.size())] = file.sha256;
      }
      if (actual.empty()) {
        return bad_archive(ErrorCode::malformed_response,
                           repo.repo.str() + ": variant " + variant + " has no files");
      }
      const PlannedBlob* metadata = blob_at(repo, prefix + "metadata.json");
      if (metadata != nullptr && metadata->bytes.size() > trust::kMaxMetadataBytes) {
        return bad_archive(ErrorCode::too_large,
                           repo.repo.str() + " " + prefix + "metadata.json is larger than 1 MiB");
      }
      // The signature first, as a fetch does: metadata.json is parsed once it holds.
      if (options_.signature_check) KH_TRY(check_signature(r, variant, metadata));
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
  util::DirtyDirs dirty;
  for (auto& [name, blob] : blobs_) {
    if (blob.writer) {
      KH_TRY(
          tx_.commit_blob(*blob.writer, cache_.blobs_dir(manifest_.repos[blob.repo].repo), dirty));
    }
  }
  // Receipts before the snapshot, as a fetch writes them: whatever is visible has its verdict.
  for (std::size_t r = 0; r < manifest_.repos.size(); ++r) {
    for (const auto& [variant, receipt] : receipts_[r]) {
      KH_TRY(
          tx_.write_receipt(manifest_.repos[r].repo, manifest_.repos[r].commit, variant, receipt));
    }
  }
  for (const auto& repo : manifest_.repos) {
    std::vector<SnapshotFile> links;
    for (const auto& file : repo.files) links.push_back({file.path, file.etag});
    KH_TRY(tx_.link_snapshot(repo.repo, repo.commit, links, dirty));
  }
  KH_TRY(dirty.sync());
  std::vector<ImportedRepo> out;
  for (std::size_t r = 0; r < manifest_.repos.size(); ++r) {
    const auto& repo = manifest_.repos[r];
    ImportedRepo imported{repo.repo, repo.commit, repo.variants, repo.files.size(),
                          {},        {},          warnings_[r]};
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
      KH_TRY(tx_.write_ref(repo.repo, ref, repo.commit));
      imported.refs_written.push_back(ref);
    }
    out.push_back(std::move(imported));
  }
  tx_.done();
  published_ = true;
  return out;
}

void Importer::remove_created_folders() {
  if (published_) return;
  // What a failed publish made goes first, then the temps of the blobs it did not commit.
  // Then only empty folders go: a download (kernelhubd runs them beside an import) or another
  // process may have published into a folder this import created, and that stays.
  tx_.roll_back();
  for (auto& [name, blob] : blobs_) blob.writer.reset();
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
                   {"signature_warnings", repo.signature_warnings},
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
  KH_TRY_ASSIGN(auto text, read_manifest_entry(a.get(), options.limits));
  auto manifest = parse_manifest(text, options.limits);
  if (!manifest) return bad_archive(manifest.error().code, manifest.error().message);
  Importer importer(cache, options, std::move(*manifest));
  KH_TRY(importer.plan());
  KH_TRY(importer.stream(a.get()));
  KH_TRY(importer.verify());
  return importer.publish();
}

}  // namespace kernelhub::cache::bundle
