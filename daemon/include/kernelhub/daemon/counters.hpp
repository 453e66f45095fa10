// The daemon's counters, bumped lock-free from every connection, flight and HTTP thread and
// read as one snapshot for `status`, /metrics and sd_notify STATUS=.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "kernelhub/daemon/daemon.hpp"

namespace kernelhub::daemon {

struct AtomicCounters {
  static constexpr auto kRelaxed = std::memory_order_relaxed;
  // ErrorCode::internal is the last code.
  static constexpr std::size_t kErrorCodes = static_cast<std::size_t>(ErrorCode::internal) + 1;

  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> hits{0};
  std::atomic<std::uint64_t> misses{0};
  std::atomic<std::uint64_t> bytes_downloaded{0};
  std::atomic<std::uint64_t> upstream_requests{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> connections{0};
  std::atomic<std::uint64_t> active_connections{0};
  std::atomic<std::uint64_t> rollbacks_refused{0};
  std::atomic<std::uint64_t> signatures_refused{0};
  std::atomic<std::uint64_t> signatures_warned{0};
  std::atomic<std::uint64_t> trust_refused{0};
  std::atomic<std::uint64_t> http_requests{0};
  std::atomic<std::uint64_t> flights{0};
  std::atomic<std::uint64_t> flights_active{0};
  std::array<std::atomic<std::uint64_t>, kErrorCodes> errors_by_code{};
  std::array<std::atomic<std::uint64_t>, proto::kFlightSecondsBounds.size() + 1> flight_buckets{};
  std::atomic<std::uint64_t> flight_micros_sum{0};
  // The cache (CacheKeeper): counters, then gauges as of its last pass.
  std::atomic<std::uint64_t> evictions{0};
  std::atomic<std::uint64_t> evicted_bytes{0};
  std::atomic<std::uint64_t> cache_bytes{0};
  std::atomic<std::uint64_t> cache_free_bytes{0};
  std::atomic<std::uint64_t> cache_pinned_bytes{0};

  // An error answered to a client (socket or HTTP), by its code.
  void count_error(ErrorCode code) {
    errors.fetch_add(1, kRelaxed);
    if (const auto i = static_cast<std::size_t>(code); i < kErrorCodes)
      errors_by_code[i].fetch_add(1, kRelaxed);
  }
  void observe_flight(std::chrono::steady_clock::duration took) {
    const double seconds = std::chrono::duration<double>(took).count();
    std::size_t bucket = 0;
    while (bucket < proto::kFlightSecondsBounds.size() &&
           seconds > proto::kFlightSecondsBounds[bucket])
      ++bucket;
    flight_buckets[bucket].fetch_add(1, kRelaxed);
    flight_micros_sum.fetch_add(
        static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(took).count()),
        kRelaxed);
  }

  DaemonCounters snapshot() const {
    DaemonCounters c;
    c.requests = requests.load(kRelaxed);
    c.hits = hits.load(kRelaxed);
    c.misses = misses.load(kRelaxed);
    c.bytes_downloaded = bytes_downloaded.load(kRelaxed);
    c.upstream_requests = upstream_requests.load(kRelaxed);
    c.errors = errors.load(kRelaxed);
    c.connections = connections.load(kRelaxed);
    c.active_connections = active_connections.load(kRelaxed);
    c.rollbacks_refused = rollbacks_refused.load(kRelaxed);
    c.signatures_refused = signatures_refused.load(kRelaxed);
    c.signatures_warned = signatures_warned.load(kRelaxed);
    c.trust_refused = trust_refused.load(kRelaxed);
    c.http_requests = http_requests.load(kRelaxed);
    c.flights = flights.load(kRelaxed);
    c.flights_active = flights_active.load(kRelaxed);
    c.evictions = evictions.load(kRelaxed);
    c.evicted_bytes = evicted_bytes.load(kRelaxed);
    c.cache_bytes = cache_bytes.load(kRelaxed);
    c.cache_free_bytes = cache_free_bytes.load(kRelaxed);
    c.cache_pinned_bytes = cache_pinned_bytes.load(kRelaxed);
    for (std::size_t i = 0; i < kErrorCodes; ++i) {
      if (const auto n = errors_by_code[i].load(kRelaxed); n > 0)
        c.errors_by_class.emplace(to_string(static_cast<ErrorCode>(i)), n);
    }
    for (const auto& bucket : flight_buckets)
      c.flight_seconds_buckets.push_back(bucket.load(kRelaxed));
    c.flight_seconds_sum = static_cast<double>(flight_micros_sum.load(kRelaxed)) / 1e6;
    return c;
  }
};

}  // namespace kernelhub::daemon
