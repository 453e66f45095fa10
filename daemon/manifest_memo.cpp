#include "kernelhub/daemon/manifest_memo.hpp"

namespace kernelhub::daemon {

std::shared_ptr<const hub::FetchResult> ManifestMemo::warm(const fetch::ResolveKey& resolve_key,
                                                           const fetch::Selection& selection) {
  std::lock_guard lock(mutex_);
  const auto resolved = resolved_.find(resolve_key);
  if (resolved == resolved_.end() || resolved->second.expires < now_()) return nullptr;
  const auto manifest =
      manifests_.find(fetch::ManifestKey{resolve_key.repo, resolved->second.commit, selection});
  return manifest == manifests_.end() ? nullptr : manifest->second;
}

void ManifestMemo::remember(const fetch::FlightKey& key, const hub::FetchResult& result) {
  auto kept = std::make_shared<hub::FetchResult>(result);
  auto& manifest = kept->manifest;
  manifest.from_cache = true;
  manifest.cache_fallback.clear();
  manifest.refused_move.clear();
  manifest.signature_warnings.clear();
  std::lock_guard lock(mutex_);
  resolved_[key.resolve] = {manifest.commit, now_() + resolve_ttl_};
  manifests_[fetch::ManifestKey{manifest.repo, manifest.commit, key.selection}] = std::move(kept);
}

void ManifestMemo::forget_all() {
  std::lock_guard lock(mutex_);
  resolved_.clear();
  manifests_.clear();
}

}  // namespace kernelhub::daemon
