#include "kernelhub/cache/eviction.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "eviction_steps.hpp"
#include "kernelhub/cache/cache_usage.hpp"

namespace kernelhub::cache {
namespace {

// One thing eviction may remove: a variant folder, or a snapshot that has none.
struct Candidate {
  std::size_t repo = 0;
  std::size_t snapshot = 0;
  std::optional<std::size_t> variant;
  WallClock::time_point last_used;
  int rank = 2;  // 0: unreferenced (gc), 1: unused too long, 2: least recently used
  std::string reason;
};

std::string days(std::chrono::seconds age) {
  const auto d = age.count() / 86400;
  if (d >= 2) return std::to_string(d) + " days";
  return std::to_string(age.count() / 3600) + " hours";
}

// Blob reference counts of one repo over everything that links them.
std::map<std::string, int> link_counts(const RepoUsage& repo) {
  std::map<std::string, int> counts;
  for (const auto& [blob, size] : repo.blobs) counts[blob] = 0;
  for (const auto& snap : repo.snapshots) {
    for (const auto& v : snap.variants)
      for (const auto& b : v.blobs) ++counts[b];
    for (const auto& b : snap.other_blobs) ++counts[b];
  }
  return counts;
}

}  // namespace

Result<FileSystemSpace> file_system_space(const std::filesystem::path& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0)
    return util::errno_error(errno, "cannot read the free space of", dir);
  return FileSystemSpace{static_cast<std::uint64_t>(vfs.f_blocks) * vfs.f_frsize,
                         static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize};
}

std::uint64_t required_free_bytes(const trust::CacheSettings& limits,
                                  const FileSystemSpace& space) {
  std::uint64_t need = limits.min_free_bytes.value_or(0);
  if (limits.min_free_percent) {
    need =
        std::max(need, static_cast<std::uint64_t>(std::ceil(static_cast<double>(space.size_bytes) *
                                                            *limits.min_free_percent / 100)));
  }
  return need;
}

Result<EvictionReport> evict(const KernelCache& cache, const EvictionOptions& options) {
  EvictionReport report;
  std::error_code ec;
  if (!std::filesystem::exists(cache.root(), ec)) return report;
  const auto& limits = options.limits;
  KH_TRY_ASSIGN(report.space,
                options.space ? options.space(cache.root()) : file_system_space(cache.root()));

  std::vector<RepoUsage> repos;
  for (const auto& id : cached_repo_ids(cache)) {
    RepoUsage usage = scan_repo_usage(cache, id);
    report.cache_bytes += usage.size_bytes;
    if (usage.pins_damaged) {
      report.skipped.push_back(id.str() +
                               " (its pins cannot be read: " + usage.pins_damaged->message + ")");
      continue;
    }
    repos.push_back(std::move(usage));
  }

  // What may go, in the order it goes.
  std::vector<Candidate> candidates;
  for (std::size_t r = 0; r < repos.size(); ++r) {
    for (std::size_t s = 0; s < repos[r].snapshots.size(); ++s) {
      const auto& snap = repos[r].snapshots[s];
      const bool unreferenced = options.remove_unreferenced && snap.refs.empty();
      const auto add = [&](std::optional<std::size_t> variant, WallClock::time_point used) {
        if (used + options.recent_grace > options.now) return;  // in use right now
        Candidate c{r, s, variant, used, 2, ""};
        const auto idle = options.now - used;  // not cut to seconds: "0s" means any idle time
        const auto age = std::chrono::duration_cast<std::chrono::seconds>(idle);
        if (unreferenced) {
          c.rank = 0;
          c.reason = "no ref names its commit (gc)";
        } else if (limits.max_unused_age && idle > *limits.max_unused_age) {
          c.rank = 1;
          c.reason =
              "unused for " + days(age) + " (max_unused_age " + days(*limits.max_unused_age) + ")";
        }
        candidates.push_back(std::move(c));
      };
      for (std::size_t v = 0; v < snap.variants.size(); ++v) {
        if (snap.variants[v].pinned) {
          report.pinned_bytes += snap.variants[v].size_bytes;
          continue;
        }
        add(v, snap.variants[v].last_used);
      }
      const bool commit_pinned = std::any_of(repos[r].pins.begin(), repos[r].pins.end(),
                                             [&](const Pin& p) { return p.commit == snap.commit; });
      if (snap.variants.empty() && !commit_pinned)
        add(std::nullopt, steps::snapshot_time(cache, repos[r].repo, snap.commit));
    }
  }
  std::sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    return std::tie(a.rank, a.last_used, a.repo, a.snapshot, a.variant) <
           std::tie(b.rank, b.last_used, b.repo, b.snapshot, b.variant);
  });

  // Simulate, to choose; orphan blobs (nothing links them) go in any case.
  std::vector<std::map<std::string, int>> counts;
  std::vector<bool> has_orphans;
  std::uint64_t total = report.cache_bytes;
  std::uint64_t free = report.space.free_bytes;
  for (const auto& repo : repos) {
    counts.push_back(link_counts(repo));
    has_orphans.push_back(false);
    for (const auto& [blob, n] : counts.back()) {
      if (n != 0) continue;
      has_orphans.back() = true;
      const auto size = repo.blobs.at(blob);
      total -= size;
      free += size;
    }
  }
  const std::uint64_t need_free = required_free_bytes(limits, report.space) + options.reserve_bytes;
  const bool watch_free = limits.min_free_bytes || limits.min_free_percent || options.reserve_bytes;
  const auto over = [&] {
    return (limits.max_size && total > *limits.max_size) || (watch_free && free < need_free);
  };
  const auto release = [&](std::size_t r, const std::set<std::string>& blobs) {
    for (const auto& blob : blobs) {
      if (--counts[r][blob] != 0) continue;
      const auto size = repos[r].blobs.count(blob) ? repos[r].blobs.at(blob) : 0;
      total -= size;
      free += size;
    }
  };
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> variants_left;
  std::vector<steps::Removal> chosen;
  for (const auto& c : candidates) {
    if (c.rank == 2 && !over()) break;
    const auto& snap = repos[c.repo].snapshots[c.snapshot];
    auto [left, fresh] = variants_left.try_emplace({c.repo, c.snapshot}, snap.variants.size());
    std::string reason = c.reason;
    if (reason.empty()) {
      reason = limits.max_size && total > *limits.max_size
                   ? "cache over max_size (" + std::to_string(total) + " > " +
                         std::to_string(*limits.max_size) + " bytes)"
                   : "free space under min_free (" + std::to_string(free) + " < " +
                         std::to_string(need_free) + " bytes)";
    }
    if (c.variant) {
      const auto& v = snap.variants[*c.variant];
      release(c.repo, v.blobs);
      if (--left->second == 0) release(c.repo, snap.other_blobs);
      report.evicted.push_back(
          {{repos[c.repo].repo, snap.commit, v.name}, v.size_bytes, v.last_used, reason});
    } else {
      release(c.repo, snap.other_blobs);
      report.evicted.push_back(
          {{repos[c.repo].repo, snap.commit, ""}, snap.size_bytes, c.last_used, reason});
    }
    chosen.push_back({c.repo, snap.commit, c.variant ? snap.variants[*c.variant].name : "",
                      c.last_used, c.rank == 2});
  }
  report.within_bounds = !over();
  if (options.dry_run) {
    report.freed_bytes = report.cache_bytes - total;
    return report;
  }

  // Carry it out, one repo at a time under its removal lock.
  std::vector<EvictedVariant> done;
  for (std::size_t r = 0; r < repos.size(); ++r) {
    std::vector<steps::Removal> mine;
    for (const auto& removal : chosen)
      if (removal.repo == r) mine.push_back(removal);
    if (mine.empty() && !has_orphans[r] && !steps::trash_has_entries(cache, repos[r].repo))
      continue;
    auto outcome = steps::remove_from_repo(cache, repos[r].repo, mine, options.on_remove);
    if (!outcome) return fail(outcome.error());
    if (outcome->busy) {
      report.skipped.push_back(repos[r].repo.str() + " (a fetch is using it)");
      report.within_bounds = report.within_bounds && mine.empty();
      continue;
    }
    report.removed_snapshots += outcome->removed_snapshots;
    report.removed_blobs += outcome->removed_blobs;
    report.freed_bytes += outcome->freed_bytes;
    for (const auto& ev : report.evicted) {
      if (ev.ref.repo == repos[r].repo &&
          outcome->removed.contains({ev.ref.commit, ev.ref.variant}))
        done.push_back(ev);
    }
  }
  report.evicted = std::move(done);
  return report;
}

}  // namespace kernelhub::cache
