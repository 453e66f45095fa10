#include "kernelhub/cache/pinning.hpp"

#include <set>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/lockfile.hpp"

namespace kernelhub::cache {
namespace {

// The blobs a pin keeps in a scanned repo, and whether its commit is cached at all.
std::set<std::string> blobs_of(const RepoUsage& repo, const Pin& pin, bool& cached) {
  std::set<std::string> blobs;
  cached = false;
  for (const auto& snap : repo.snapshots) {
    if (snap.commit != pin.commit) continue;
    cached = true;
    for (const auto& v : snap.variants) {
      if (!pin.covers(snap.commit, v.name)) continue;
      blobs.insert(v.blobs.begin(), v.blobs.end());
      blobs.insert(snap.other_blobs.begin(), snap.other_blobs.end());
    }
  }
  return blobs;
}

std::uint64_t size_of(const RepoUsage& repo, const std::set<std::string>& blobs) {
  std::uint64_t total = 0;
  for (const auto& blob : blobs) {
    if (const auto it = repo.blobs.find(blob); it != repo.blobs.end()) total += it->second;
  }
  return total;
}

Result<std::string> resolve(const KernelCache& cache, const PinSpec& spec) {
  if (trust::is_git_object_id(spec.revision)) return spec.revision;
  if (auto commit = cache.read_ref(spec.repo, spec.revision)) return *commit;
  return fail(ErrorCode::revision_not_found,
              spec.repo.str() + " has no ref '" + spec.revision +
                  "' in the cache: download it first (`kernelhub download " + spec.repo.str() +
                  "`), or pin a commit (40 hex), e.g. from `kernelhub lock`");
}

}  // namespace

std::uint64_t pinned_bytes(const RepoUsage& repo) {
  std::set<std::string> blobs;
  for (const auto& pin : repo.pins) {
    bool cached = false;
    auto mine = blobs_of(repo, pin, cached);
    blobs.insert(mine.begin(), mine.end());
  }
  return size_of(repo, blobs);
}

Result<std::vector<Pin>> pin_revision(const KernelCache& cache, const PinSpec& spec,
                                      std::optional<std::uint64_t> max_size,
                                      WallClock::time_point now) {
  KH_TRY_ASSIGN(auto commit, resolve(cache, spec));
  Pin pin{commit, spec.variants, spec.source, spec.pinned_by,
          std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count()};
  if (max_size) {
    std::uint64_t others = 0;
    for (const auto& id : cached_repo_ids(cache)) {
      if (id != spec.repo) others += pinned_bytes(scan_repo_usage(cache, id));
    }
    RepoUsage mine = scan_repo_usage(cache, spec.repo);
    const std::uint64_t before = pinned_bytes(mine);
    mine.pins.push_back(pin);
    const std::uint64_t after = pinned_bytes(mine);
    bool cached = false;
    const std::uint64_t alone = size_of(mine, blobs_of(mine, pin, cached));
    if (others + after > *max_size) {
      return fail(ErrorCode::policy,
                  "pinning " + spec.repo.str() + "@" + commit + " would pin " +
                      std::to_string(others + after) +
                      " bytes in all, over the cache's max_size of " + std::to_string(*max_size) +
                      " bytes (this pin: " + std::to_string(alone) +
                      " bytes; pinned already: " + std::to_string(others + before) +
                      " bytes): unpin something, or raise [cache] max_size");
    }
  }
  return add_pin(cache, spec.repo, std::move(pin));
}

nlohmann::json pins_listing_json(const KernelCache& cache) {
  auto out = nlohmann::json::array();
  for (const auto& id : cached_repo_ids(cache)) {
    const RepoUsage usage = scan_repo_usage(cache, id);
    if (usage.pins_damaged) {
      out.push_back({{"repo", id.str()}, {"error", usage.pins_damaged->message}});
      continue;
    }
    if (usage.pins.empty()) continue;
    auto pins = nlohmann::json::array();
    for (const auto& pin : usage.pins) {
      bool cached = false;
      const auto blobs = blobs_of(usage, pin, cached);
      pins.push_back({{"commit", pin.commit},
                      {"variants", pin.variants},
                      {"source", pin.source},
                      {"pinned_by", pin.pinned_by},
                      {"pinned_at", pin.pinned_at},
                      {"size_bytes", size_of(usage, blobs)},
                      {"cached", cached}});
    }
    out.push_back({{"repo", id.str()}, {"pins", std::move(pins)}});
  }
  return out;
}

}  // namespace kernelhub::cache
