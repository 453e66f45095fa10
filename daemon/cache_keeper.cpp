#include "kernelhub/daemon/cache_keeper.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::daemon {
namespace {

using cache::WallClock;

std::string ago(WallClock::time_point when, WallClock::time_point now) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(now - when).count();
  if (s < 120) return std::to_string(s) + "s ago";
  if (s < 7200) return std::to_string(s / 60) + "min ago";
  if (s < 172800) return std::to_string(s / 3600) + "h ago";
  return std::to_string(s / 86400) + "d ago";
}

}  // namespace

CacheKeeper::CacheKeeper(std::filesystem::path root, std::shared_mutex& maintenance,
                         AtomicCounters& counters, Settings settings, bool record_usage)
    : root_(std::move(root)),
      maintenance_(maintenance),
      counters_(counters),
      settings_(std::move(settings)),
      record_usage_(record_usage) {}

CacheKeeper::~CacheKeeper() {
  {
    std::lock_guard lock(wake_mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  flush_usage();
}

void CacheKeeper::start() {
  thread_ = std::thread([this] { run(); });
}

void CacheKeeper::record_use(const fetch::Manifest& manifest) {
  if (!record_usage_) return;
  const auto now = WallClock::now();
  std::lock_guard lock(usage_mutex_);
  for (const auto& variant : manifest.variants)
    pending_[{manifest.repo, manifest.commit, variant}] = now;
}

void CacheKeeper::flush_usage() {
  std::map<cache::VariantRef, WallClock::time_point> batch;
  {
    std::lock_guard lock(usage_mutex_);
    batch.swap(pending_);
  }
  const cache::KernelCache cache(root_);
  for (const auto& [ref, when] : batch) {
    // A variant evicted since its hand-out has no folder left to record a use of.
    if (!std::filesystem::is_directory(cache.snapshot_dir(ref.repo, ref.commit) / "build" /
                                       ref.variant))
      continue;
    if (auto recorded = cache::record_use(cache, ref, when, std::chrono::seconds(0)); !recorded)
      spdlog::debug("could not record the use of {}: {}", ref.str(), recorded.error().message);
  }
}

void CacheKeeper::published() {
  {
    std::lock_guard lock(wake_mutex_);
    published_ = true;
  }
  wake_.notify_all();
}

Result<cache::EvictionReport> CacheKeeper::evict_locked(const cache::EvictionOptions& options,
                                                        std::string_view why) {
  std::lock_guard lock(evict_mutex_);
  flush_usage();  // the latest uses count
  const cache::KernelCache cache(root_);
  auto report = cache::evict(cache, options);
  if (!report) {
    spdlog::warn("cache eviction ({}) failed: {}: {}", why, to_string(report.error().code),
                 report.error().message);
    return report;
  }
  const auto now = WallClock::now();
  if (!options.dry_run) {
    for (const auto& ev : report->evicted) {
      spdlog::info("evicted {} ({} bytes, last used {}; {}): {}", ev.ref.str(), ev.size_bytes,
                   ago(ev.last_used, now), why, ev.reason);
    }
    if (!report->evicted.empty() || report->removed_blobs > 0) {
      spdlog::info("cache eviction ({}): {} variant(s), {} snapshot(s), {} blob(s), {} bytes freed",
                   why, report->evicted.size(), report->removed_snapshots, report->removed_blobs,
                   report->freed_bytes);
      counters_.evictions.fetch_add(report->evicted.size(), std::memory_order_relaxed);
      counters_.evicted_bytes.fetch_add(report->freed_bytes, std::memory_order_relaxed);
      if (after_eviction_) after_eviction_();
    }
  }
  const std::uint64_t freed = options.dry_run ? 0 : report->freed_bytes;
  counters_.cache_bytes.store(report->cache_bytes - std::min(freed, report->cache_bytes),
                              std::memory_order_relaxed);
  counters_.cache_pinned_bytes.store(report->pinned_bytes, std::memory_order_relaxed);
  counters_.cache_free_bytes.store(report->space.free_bytes + freed, std::memory_order_relaxed);
  if (!report->within_bounds && options.limits.bounded()) {
    spdlog::warn("the cache stays over its bounds after eviction ({}): {} bytes pinned{}{}", why,
                 report->pinned_bytes, report->skipped.empty() ? "" : "; left alone: ",
                 util::join(report->skipped, "; "));
  }
  return report;
}

Result<cache::EvictionReport> CacheKeeper::pass(std::string_view why) {
  std::shared_lock maintenance(maintenance_);
  cache::EvictionOptions options;
  options.limits = settings_();
  options.dry_run = !options.limits.bounded();  // unbounded: the gauges only
  options.recent_grace = options.limits.in_use_grace.value_or(kInUseGrace);
  return evict_locked(options, why);
}

Result<void> CacheKeeper::make_room(std::uint64_t bytes, bool disk_said_full) {
  const auto limits = settings_();
  if (!limits.bounded()) return ok();  // no [cache] policy: the download tries as before
  KH_TRY_ASSIGN(const auto space, cache::file_system_space(root_));
  if (!disk_said_full && space.free_bytes >= bytes + cache::required_free_bytes(limits, space))
    return ok();
  cache::EvictionOptions options;
  options.limits = limits;
  options.reserve_bytes = bytes;
  options.recent_grace = limits.in_use_grace.value_or(kInUseGrace);
  if (disk_said_full) {
    options.space = [](const std::filesystem::path& dir) -> Result<cache::FileSystemSpace> {
      KH_TRY_ASSIGN(auto now, cache::file_system_space(dir));
      now.free_bytes = 0;
      return now;
    };
  }
  KH_TRY_ASSIGN(
      const auto report,
      evict_locked(options, disk_said_full ? "after ENOSPC" : "to make room for a download"));
  const auto after = report.space.free_bytes + report.freed_bytes;
  if (disk_said_full || after >= bytes) return ok();
  return fail(ErrorCode::disk_full, "a download of " + std::to_string(bytes) +
                                        " bytes does not fit: " + std::to_string(after) +
                                        " bytes free after evicting " +
                                        std::to_string(report.evicted.size()) + " variant(s) (" +
                                        std::to_string(report.pinned_bytes) + " bytes are pinned)");
}

Result<cache::EvictionReport> CacheKeeper::collect(cache::EvictionOptions options) {
  options.remove_unreferenced = true;
  const std::string_view why = options.dry_run ? "gc --dry-run" : "gc";
  return evict_locked(options, why);
}

void CacheKeeper::run() {
  (void)pass("start");
  auto last_check = std::chrono::steady_clock::now();
  for (;;) {
    bool after_publish = false;
    {
      std::unique_lock lock(wake_mutex_);
      wake_.wait_for(lock, kUsageFlush, [this] { return stop_ || published_; });
      if (stop_) return;
      after_publish = std::exchange(published_, false);
    }
    flush_usage();
    const auto interval = settings_().check_interval.value_or(kDefaultCheckInterval);
    const auto now = std::chrono::steady_clock::now();
    if (after_publish || now - last_check >= interval) {
      (void)pass(after_publish ? "after a download" : "periodic check");
      last_check = now;
    }
  }
}

}  // namespace kernelhub::daemon
