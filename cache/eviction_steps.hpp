// Internal to eviction: the removals in one repo, carried out under its removal lock.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/cache/usage.hpp"

namespace kernelhub::cache::steps {

struct Removal {
  std::size_t repo = 0;
  std::string commit;
  std::string variant;                // empty: the snapshot itself (it has no variant folder)
  WallClock::time_point planned_use;  // its last use when it was chosen
  bool unless_used_since = false;     // chosen as least recently used: keep it if used since
};

struct RepoOutcome {
  bool busy = false;  // a fetch holds the repo: nothing was done
  std::set<std::pair<std::string, std::string>> removed;  // (commit, variant)
  std::size_t removed_snapshots = 0;
  std::size_t removed_blobs = 0;
  std::uint64_t freed_bytes = 0;
};

// Removes `removals` (each re-checked: still there, still unpinned), then the snapshots left
// without a variant folder (their refs first), empties the trash, and unlinks every blob no
// remaining snapshot links.
Result<RepoOutcome> remove_from_repo(const KernelCache& cache, const trust::RepoId& repo,
                                     const std::vector<Removal>& removals,
                                     const std::function<void(const VariantRef&)>& on_remove);

// When a snapshot folder last changed (its use, for a snapshot without variants).
WallClock::time_point snapshot_time(const KernelCache& cache, const trust::RepoId& repo,
                                    const std::string& commit);

// Whether the repo's trash holds anything (a crash in an earlier eviction).
bool trash_has_entries(const KernelCache& cache, const trust::RepoId& repo);

}  // namespace kernelhub::cache::steps
