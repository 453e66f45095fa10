// kernelhubd's single flight: one download per FlightKey at a time, each on its own thread,
// at most max_downloads of them at once and the rest in arrival order. Every request for a
// key in flight waits for that download and gets its result; a waiter that goes away cancels
// nothing. What a flight does is the runner's business (FetchService: hub::Fetcher), so a
// test steps the table with a runner of its own.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/fetch/flight_key.hpp"
#include "kernelhub/fetch/request.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/hub/progress.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::daemon {

// Called on the requesting connection's thread, never on the download's.
using ProgressSink = std::function<void(const hub::FetchProgress&)>;

class FlightTable {
 public:
  using Publish = std::function<void(const hub::FetchProgress&)>;
  // What a flight does once it has its turn, on the flight's thread; `publish` passes
  // progress on to every waiter. `client` names who started it, for the log.
  using Runner = std::function<Result<hub::FetchResult>(
      const fetch::FlightKey& key, const fetch::Request& request, const std::string& client,
      const Publish& publish)>;
  // Called on the flight's thread with a successful result, before the key leaves the table
  // (so a later request finds what it remembered, or starts a new flight).
  using Landed = std::function<void(const fetch::FlightKey& key, const hub::FetchResult&)>;

  FlightTable(Runner run, Landed landed, AtomicCounters& counters)
      : run_(std::move(run)), landed_(std::move(landed)), counters_(counters) {}
  ~FlightTable();  // joins every flight's thread
  FlightTable(const FlightTable&) = delete;
  FlightTable& operator=(const FlightTable&) = delete;

  // Joins the flight of `key` while it has no result, else starts one for `request` on
  // behalf of `client`; blocks until it lands and forwards its progress to `progress` (may
  // be empty) from this thread. shutting_down once abandon_waiters() was called.
  Result<hub::FetchResult> join(const fetch::FlightKey& key, const fetch::Request& request,
                                const std::string& client, const ProgressSink& progress);

  // At most `n` flights (at least 1) run at once; later ones wait their turn in arrival order.
  void set_max_downloads(std::size_t n);
  // Stopping: flights still waiting for a turn land with shutting_down instead of running.
  void stop_queued();
  // Stopping, once the grace is over: every waiter is answered shutting_down now (the
  // flights themselves are abandoned, not cancelled).
  void abandon_waiters();
  // Waits for the flights with a thread until `deadline`; true when none is left.
  bool wait_downloads(std::chrono::steady_clock::time_point deadline);
  // Flights with a thread: running, or waiting for their turn.
  std::size_t flights() const;

 private:
  struct Flight;
  std::shared_ptr<Flight> join_or_start(const fetch::FlightKey& key, const fetch::Request& request,
                                        const std::string& client);
  void fly(const std::shared_ptr<Flight>& flight, const fetch::FlightKey& key, std::uint64_t ticket,
           const fetch::Request& request, const std::string& client);
  // Blocks until flight `ticket` may run; false when stop_queued() came first.
  bool wait_turn(std::uint64_t ticket);

  Runner run_;
  Landed landed_;
  AtomicCounters& counters_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::map<fetch::FlightKey, std::shared_ptr<Flight>> flights_;
  std::list<std::pair<std::shared_ptr<Flight>, std::thread>> threads_;
  std::size_t running_ = 0;      // flights with a thread: running or waiting their turn
  std::size_t downloading_ = 0;  // flights past the max_downloads gate
  std::size_t max_downloads_ = 8;
  std::uint64_t next_turn_ = 0;    // ticket of the next flight to be let through
  std::uint64_t next_ticket_ = 0;  // handed to each new flight in arrival order
  bool stop_queued_ = false;
  std::atomic<bool> abandoned_{false};  // abandon_waiters() was called
};

}  // namespace kernelhub::daemon
