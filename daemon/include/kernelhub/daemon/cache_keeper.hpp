// Keeps kernelhubd's shared cache within the [cache] bounds of the policy in force: records
// each hand-out's use in memory and writes the batch to the cache's usage markers every
// kUsageFlush (never a write per warm hand-out), evicts after each publish and every
// check_interval, makes room before a download that would not fit, and runs `kernelhub gc`.
// It also keeps the cache gauges of `status` and /metrics.
//
// Evictions run one at a time. The keeper's own pass holds FetchService's maintenance lock
// shared (so verify and gc, which hold it exclusively, never run beside it); make_room runs on
// a flight's thread, which holds it already. Repos a fetch holds are skipped (eviction.hpp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string_view>
#include <thread>

#include "kernelhub/cache/eviction.hpp"
#include "kernelhub/cache/usage.hpp"
#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/fetch/manifest.hpp"
#include "kernelhub/trust/cache_settings.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::daemon {

inline constexpr std::chrono::seconds kUsageFlush{30};
inline constexpr std::chrono::seconds kDefaultCheckInterval{600};
// The keeper's passes leave variants used this recently (one it just published is about to
// be handed out), unless [cache] in_use_grace says otherwise; `kernelhub gc` has no grace.
inline constexpr std::chrono::seconds kInUseGrace{60};

class CacheKeeper {
 public:
  using Settings = std::function<trust::CacheSettings()>;
  // `settings` is read at each pass (the policy in force); `record_usage` false keeps no
  // usage (kernelhubd --no-record-usage, for the benchmark: eviction then goes by publish time).
  CacheKeeper(std::filesystem::path root, std::shared_mutex& maintenance, AtomicCounters& counters,
              Settings settings, bool record_usage);
  ~CacheKeeper();  // stops the thread and writes the pending uses
  CacheKeeper(const CacheKeeper&) = delete;
  CacheKeeper& operator=(const CacheKeeper&) = delete;

  // Starts the pass thread (a daemon that serves; tests may step pass() themselves).
  void start();
  // Called after the caller has forgotten what an eviction removed (FetchService's memo).
  void set_after_eviction(std::function<void()> after) { after_eviction_ = std::move(after); }

  // A hand-out of these variants, now: an insert into a map under a mutex.
  void record_use(const fetch::Manifest& manifest);
  // A flight published: the thread checks the bounds soon.
  void published();
  // A download of `bytes` is about to start on a flight's thread: evicts until they fit
  // besides min_free (disk_full when they cannot). `disk_said_full`: a write of it already
  // failed with ENOSPC, so the free space statvfs reports is not believed (a quota, another
  // writer): eviction frees `bytes` as if none were free, and the caller retries whatever came
  // of it. No [cache] bounds: nothing is evicted.
  Result<void> make_room(std::uint64_t bytes, bool disk_said_full = false);
  // `kernelhub gc` through the daemon; the caller holds the maintenance lock exclusively.
  Result<cache::EvictionReport> collect(cache::EvictionOptions options);
  // One pass (the thread's, or a test's): writes the pending uses, evicts when bounded,
  // refreshes the gauges. The caller must not hold the maintenance lock.
  Result<cache::EvictionReport> pass(std::string_view why);
  void flush_usage();

 private:
  Result<cache::EvictionReport> evict_locked(const cache::EvictionOptions& options,
                                             std::string_view why);
  void run();

  std::filesystem::path root_;
  std::shared_mutex& maintenance_;
  AtomicCounters& counters_;
  Settings settings_;
  bool record_usage_;
  std::function<void()> after_eviction_;

  std::mutex usage_mutex_;
  std::map<cache::VariantRef, cache::WallClock::time_point> pending_;

  std::mutex evict_mutex_;  // one eviction at a time

  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool published_ = false;
  std::thread thread_;  // last: joined before the rest goes
};

}  // namespace kernelhub::daemon
