// Serving a fetch from the cache alone (HF_HUB_OFFLINE, or the Hub failing): the ref
// from refs/, the variant from snapshots/<sha>/build/, and completeness proven by hashing
// every file against the variant's metadata.json digests.
#include <algorithm>
#include <iterator>
#include <map>
#include <system_error>

#include "fetch_call.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/util/read_file.hpp"

namespace kernelhub::hub {
namespace {

namespace fs = std::filesystem;

Unexpected not_cached(std::string what) {
  return fail(ErrorCode::offline_not_cached, std::move(what));
}

Result<std::string> cached_commit(const cache::KernelCache& cache, const fetch::Request& request) {
  if (const auto version = request.ref.version_number()) {
    // The commit the rollback guard accepted for vN wins over refs/vN, which other tools
    // (huggingface_hub, kernels) write as the Hub says.
    if (auto state = cache.read_version_state(request.repo, *version);
        state && fs::is_directory(cache.snapshot_dir(request.repo, state->accepted))) {
      return state->accepted;
    }
    if (auto commit = cache.read_ref(request.repo, request.ref.ref_name())) return *commit;
    std::string have;
    for (int v : cache.cached_versions(request.repo))
      have += (have.empty() ? "" : ", ") + std::to_string(v);
    return not_cached("version " + std::to_string(*version) + " of " + request.repo.str() +
                      " is not in the cache" +
                      (have.empty() ? "" : " (cached versions: " + have + ")"));
  }
  const std::string revision = request.ref.ref_name();
  if (is_commit_sha(revision)) return revision;
  if (auto commit = cache.read_ref(request.repo, revision)) return *commit;
  return not_cached("revision '" + revision + "' of " + request.repo.str() +
                    " is not in the cache");
}

// Every file under build/<variant>/ of the snapshot, hashed; a dangling link means the
// snapshot is incomplete.
Result<std::vector<fetch::ManifestFile>> hash_variant(const fs::path& snapshot,
                                                      const std::string& variant) {
  std::vector<fetch::ManifestFile> files;
  const fs::path dir = snapshot / "build" / variant;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    // Lexical: fs::relative would resolve the blob symlink and yield ../../blobs/<etag>.
    const auto rel = it->path().lexically_relative(snapshot).generic_string();
    if (it->is_directory(ec) || is_ignored_kernel_file(rel)) continue;
    if (!fs::exists(it->path(), ec))
      return not_cached(rel + " is missing from the cached snapshot");
    fetch::ManifestFile file;
    file.path = rel;
    file.size = fs::file_size(it->path(), ec);
    if (ec) return fail(ErrorCode::io, "cannot stat cached " + rel + ": " + ec.message());
    if (it->is_symlink(ec)) file.etag = fs::read_symlink(it->path(), ec).filename().string();
    KH_TRY_ASSIGN(file.sha256, trust::sha256_file_hex(it->path()));
    files.push_back(std::move(file));
  }
  if (ec)
    return fail(ErrorCode::io,
                "cannot read the cached snapshot " + dir.string() + ": " + ec.message());
  if (files.empty()) return not_cached("the cached variant " + variant + " is empty");
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.path < b.path; });
  return files;
}

Result<void> verify_cached_variant(const fs::path& snapshot, const std::string& variant,
                                   const std::vector<fetch::ManifestFile>& files) {
  const std::string prefix = "build/" + variant + "/";
  const auto metadata_file = std::find_if(
      files.begin(), files.end(),
      [&](const fetch::ManifestFile& f) { return f.path == prefix + "metadata.json"; });
  if (metadata_file == files.end()) return ok();  // nothing to check against, as `kernels` does
  auto text = util::read_small_file(snapshot / metadata_file->path, trust::kMaxMetadataBytes);
  if (!text) return fail(text.error().code, metadata_file->path + ": " + text.error().message);
  auto metadata = trust::parse_kernel_metadata(*text);
  if (!metadata)
    return fail(metadata.error().code, metadata_file->path + ": " + metadata.error().message);
  std::map<std::string, std::string> actual;
  for (const auto& file : files) actual[file.path.substr(prefix.size())] = file.sha256;
  auto verified = trust::verify_variant_digests(*metadata, actual);
  if (!verified && verified.error().code == ErrorCode::entry_not_found) {
    return not_cached("the cached snapshot of " + variant +
                      " is incomplete: " + verified.error().message);
  }
  return verified;
}

}  // namespace

bool FetchCall::has_cached_snapshot(const fetch::Request& request) const {
  auto commit = cached_commit(f_.cache_, request);
  std::error_code ec;
  return commit && fs::is_directory(f_.cache_.snapshot_dir(request.repo, *commit) / "build", ec);
}

Result<FetchResult> FetchCall::fetch_from_cache(const fetch::Request& request) {
  KH_TRY_ASSIGN(auto commit, cached_commit(f_.cache_, request));
  return fetch_cached_commit(request, commit);
}

Result<FetchResult> FetchCall::fetch_cached_commit(const fetch::Request& request,
                                                   const std::string& commit) {
  const fs::path snapshot = f_.cache_.snapshot_dir(request.repo, commit);
  std::error_code ec;
  std::vector<std::string> names;
  for (fs::directory_iterator it(snapshot / "build", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) names.push_back(it->path().filename().string());
  }
  if (names.empty())
    return not_cached(request.repo.str() + " at " + commit + " has no cached build variants");
  KH_TRY_ASSIGN(auto variants, choose_variants(request, names));

  FetchResult result;
  result.manifest.repo = request.repo;
  result.manifest.commit = commit;
  result.manifest.variants = variants;
  result.manifest.snapshot_path = snapshot;
  result.manifest.from_cache = true;
  receipts_.clear();
  signature_warnings_.clear();
  for (const auto& variant : variants) {
    KH_TRY_ASSIGN(auto files, hash_variant(snapshot, variant));
    // The signature (receipt) first: metadata.json is parsed once it holds.
    KH_TRY(check_cached_signature(request, commit, variant, files));
    KH_TRY(verify_cached_variant(snapshot, variant, files));
    std::vector<std::pair<std::string, std::string>> ids;
    ids.reserve(files.size());
    for (const auto& file : files) ids.emplace_back(file.path, file.etag);
    KH_TRY(check_locked_hashes(request, commit, variant, ids));
    for (auto& file : files) result.manifest.files.push_back(std::move(file));
  }
  take_signatures(request, result);
  return result;
}

}  // namespace kernelhub::hub
