#include "kernelhub/daemon/manifest_memo.hpp"

namespace kernelhub::daemon {

Manifest Manifest::of(const hub::FetchResult& result) {
  return {result.repo,  result.commit,     result.variants,      result.snapshot_path.string(),
          result.files, result.signatures, result.signed_version};
}

std::shared_ptr<const Manifest> ManifestMemo::warm(const fetch::ResolveKey& resolve_key,
                                                   const fetch::Selection& selection) {
  std::lock_guard lock(mutex_);
  const auto resolved = resolved_.find(resolve_key);
  if (resolved == resolved_.end() || resolved->second.expires < now_()) return nullptr;
  const auto manifest =
      manifests_.find(fetch::ManifestKey{resolve_key.repo, resolved->second.commit, selection});
  return manifest == manifests_.end() ? nullptr : manifest->second;
}

void ManifestMemo::remember(const fetch::FlightKey& key, const hub::FetchResult& result) {
  auto manifest = std::make_shared<const Manifest>(Manifest::of(result));
  std::lock_guard lock(mutex_);
  resolved_[key.resolve] = {result.commit, now_() + resolve_ttl_};
  manifests_[fetch::ManifestKey{result.repo, result.commit, key.selection}] = std::move(manifest);
}

void ManifestMemo::forget_all() {
  std::lock_guard lock(mutex_);
  resolved_.clear();
  manifests_.clear();
}

}  // namespace kernelhub::daemon
