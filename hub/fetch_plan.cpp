#include "fetch_plan.hpp"

#include <spdlog/spdlog.h>

#include <iterator>

#include "kernelhub/hub/downloader.hpp"
#include "kernelhub/hub/signature_gate.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/read_file.hpp"
#include "kernelhub/variant/variant_name.hpp"

namespace kernelhub::hub {
namespace {

std::string variant_prefix(const std::string& variant) { return "build/" + variant + "/"; }

}  // namespace

FetchPlan::FetchPlan(const HubConfig& config, HttpClient& http, HubApi& api,
                     cache::KernelCache& cache, trust::RepoId repo, std::string commit)
    : config_(config),
      http_(http),
      api_(api),
      cache_(cache),
      repo_(std::move(repo)),
      commit_(std::move(commit)) {}

std::optional<std::string> FetchPlan::cached_sha256(const TreeEntry& entry) const {
  if (!cache_.has_blob(repo_, entry.etag())) return std::nullopt;
  const auto blob = cache_.blobs_dir(repo_) / entry.etag();
  auto sha256 = trust::sha256_file_hex(blob);
  if (!sha256) return std::nullopt;
  const bool intact = entry.is_lfs() ? *sha256 == entry.etag() : [&] {
    auto sha1 = trust::git_blob_sha1_file_hex(blob);
    return sha1 && *sha1 == entry.etag();
  }();
  if (!intact) {
    spdlog::warn("cached blob {} of {} is damaged; downloading it again", entry.etag(),
                 repo_.str());
    return std::nullopt;
  }
  return *sha256;
}

Result<std::size_t> FetchPlan::slot_for(const TreeEntry& entry) {
  if (auto it = slot_by_etag_.find(entry.etag()); it != slot_by_etag_.end()) return it->second;
  cache::ExpectedBlob expected{
      entry.etag(), entry.is_lfs() ? cache::DigestKind::sha256 : cache::DigestKind::git_sha1,
      entry.size};
  cache::BlobWriterOptions options;
  options.published_mode = cache_.published_blob_mode();
  KH_TRY_ASSIGN(auto writer, cache::BlobWriter::create(cache_.blobs_dir(repo_), expected, options));
  slots_.push_back(Slot{std::move(writer), entry.path, false});
  slot_by_etag_[entry.etag()] = slots_.size() - 1;
  return slots_.size() - 1;
}

Result<std::string> FetchPlan::read_small(Planned& file) {
  const auto cap = config_.max_metadata_body;
  if (file.entry.size > cap) {
    return fail(ErrorCode::too_large, file.entry.path + " is " + std::to_string(file.entry.size) +
                                          " bytes, over the " + std::to_string(cap) + "-byte cap");
  }
  if (!file.slot) return util::read_small_file(cache_.blobs_dir(repo_) / file.entry.etag(), cap);
  Slot& slot = slots_[*file.slot];
  KH_TRY_ASSIGN(auto url, api_.resolve_url(repo_, commit_, file.entry.path));
  HttpRequest request;
  request.url = std::move(url);
  request.follow_redirects = true;
  request.max_body = cap;
  request.file_size = file.entry.size;  // a file: its stall timeout and deadline
  KH_TRY_ASSIGN(auto response, http_.send(request));
  if (!slot.filled) {
    // The same bytes become the cached blob: size and etag are checked by finish().
    KH_TRY(slot.writer.write(response.body.data(), response.body.size()));
    auto finished = slot.writer.finish();
    if (!finished)
      return fail(finished.error().code, file.entry.path + ": " + finished.error().message);
    slot.filled = true;
  }
  file.sha256 = slot.writer.sha256_hex();
  return std::move(response.body);
}

Result<void> FetchPlan::add_variant(const std::string& variant,
                                    const std::vector<TreeEntry>& entries) {
  if (!prepared_) {
    KH_TRY(cache_.prepare_repo(repo_));
    prepared_ = true;
  }
  std::optional<std::size_t> metadata_index;
  std::optional<std::size_t> bundle_index;
  const auto parsed = variant::parse_variant_name(variant);
  const bool python_only = parsed && parsed->framework == variant::Framework::noarch;
  for (const auto& entry : entries) {
    if (!entry.is_file || is_ignored_kernel_file(entry.path)) continue;
    if (python_only && entry.path.ends_with(".py") && entry.size > variant::kMaxPythonSourceBytes) {
      return fail(ErrorCode::too_large,
                  entry.path + " is listed at " + std::to_string(entry.size) +
                      " bytes; a Python-only build's sources are imported from memory, at most " +
                      std::to_string(variant::kMaxPythonSourceBytes) +
                      " bytes each, so this build is refused before any download");
    }
    Planned file{entry, variant, "", std::nullopt};
    if (auto sha256 = cached_sha256(entry)) {
      file.sha256 = std::move(*sha256);
    } else {
      KH_TRY_ASSIGN(file.slot, slot_for(entry));
    }
    if (entry.path == variant_prefix(variant) + "metadata.json") metadata_index = files_.size();
    if (entry.path == variant_prefix(variant) + std::string(kSignatureBundleFile)) {
      bundle_index = files_.size();
    }
    files_.push_back(std::move(file));
  }
  std::optional<std::string> text;
  if (metadata_index) {
    KH_TRY_ASSIGN(text, read_small(files_[*metadata_index]));
  }
  if (signature_hook_) {
    Result<std::optional<std::string>> bundle = std::optional<std::string>();
    if (bundle_index && metadata_index) {
      auto read = read_small(files_[*bundle_index]);
      if (read) {
        bundle = std::optional<std::string>(std::move(*read));
      } else if (read.error().code == ErrorCode::too_large) {
        bundle = fail(read.error());  // a verdict on the signature, not a failed fetch
      } else {
        return fail(read.error());
      }
    }
    const std::string etag = metadata_index ? files_[*metadata_index].entry.etag() : "";
    KH_TRY(signature_hook_(variant, etag, text.value_or(""), bundle));
  }
  if (text) {
    auto metadata = trust::parse_kernel_metadata(*text);
    if (!metadata) {
      return fail(metadata.error().code,
                  files_[*metadata_index].entry.path + ": " + metadata.error().message);
    }
    metadata_[variant] = std::move(*metadata);
  }
  return ok();
}

Result<void> FetchPlan::download(const ProgressCallback& progress) {
  std::vector<DownloadJob> jobs;
  FetchProgress base;
  for (auto& slot : slots_) {
    if (slot.filled) continue;
    KH_TRY_ASSIGN(auto url, api_.resolve_url(repo_, commit_, slot.path));
    jobs.push_back({slot.path, std::move(url), &slot.writer});
    base.bytes_total += slot.writer.expected().size;
  }
  base.files_total = static_cast<int>(jobs.size());
  if (space_gate_ && base.bytes_total > 0) KH_TRY(space_gate_(base.bytes_total));
  if (progress) progress(base);
  Downloader downloader(config_);
  KH_TRY(downloader.run(jobs, progress, base));
  for (auto& file : files_) {
    if (file.slot) file.sha256 = slots_[*file.slot].writer.sha256_hex();
  }
  return ok();
}

Result<void> FetchPlan::verify() const {
  for (const auto& [variant, metadata] : metadata_) {
    std::map<std::string, std::string> actual;
    const std::string prefix = variant_prefix(variant);
    for (const auto& file : files_) {
      if (file.variant == variant) actual[file.entry.path.substr(prefix.size())] = file.sha256;
    }
    auto verified = trust::verify_variant_digests(metadata, actual);
    if (!verified) {
      // A file listed in metadata.json but absent from the tree is a broken build, not a
      // missing repo entry: nothing of it may be published.
      const auto code = verified.error().code == ErrorCode::entry_not_found
                            ? ErrorCode::hash_mismatch
                            : verified.error().code;
      return fail(code, prefix + ": " + verified.error().message);
    }
  }
  return ok();
}

Result<void> FetchPlan::publish() {
  // One fsync per changed folder for the whole publish (blobs/, the snapshot's folders),
  // after every entry is in place: the first one commits the journal, the others find
  // little left. The ref is written after it.
  util::DirtyDirs dirty;
  for (auto& slot : slots_) {
    KH_TRY(slot.writer.commit(&dirty));
  }
  std::vector<cache::SnapshotFile> links;
  links.reserve(files_.size());
  for (const auto& file : files_) links.push_back({file.entry.path, file.entry.etag()});
  KH_TRY(cache_.link_snapshot(repo_, commit_, links, &dirty));
  return dirty.sync();
}

std::vector<fetch::ManifestFile> FetchPlan::fetched_files() const {
  std::vector<fetch::ManifestFile> out;
  out.reserve(files_.size());
  for (const auto& file : files_)
    out.push_back({file.entry.path, file.entry.size, file.sha256, file.entry.etag()});
  return out;
}

}  // namespace kernelhub::hub
