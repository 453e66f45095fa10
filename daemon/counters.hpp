// The daemon's counters, bumped lock-free from every connection and flight thread and read
// as one snapshot for `status` and sd_notify STATUS=.
#pragma once

#include <atomic>
#include <cstdint>

#include "daemon/daemon.hpp"

namespace kernelhub::daemon {

struct AtomicCounters {
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

  DaemonCounters snapshot() const {
    constexpr auto relaxed = std::memory_order_relaxed;
    return {requests.load(relaxed),
            hits.load(relaxed),
            misses.load(relaxed),
            bytes_downloaded.load(relaxed),
            upstream_requests.load(relaxed),
            errors.load(relaxed),
            connections.load(relaxed),
            active_connections.load(relaxed),
            rollbacks_refused.load(relaxed),
            signatures_refused.load(relaxed),
            signatures_warned.load(relaxed)};
  }
};

}  // namespace kernelhub::daemon
