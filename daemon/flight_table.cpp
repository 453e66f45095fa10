#include "kernelhub/daemon/flight_table.hpp"

#include <spdlog/spdlog.h>

#include <optional>
#include <vector>

namespace kernelhub::daemon {

struct FlightTable::Flight {
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<Result<hub::FetchResult>> result;  // set once: the flight has landed
  hub::FetchProgress progress;
  std::uint64_t progress_seq = 0;
  bool finished = false;  // its thread is about to exit (guarded by FlightTable::mutex_)
};

FlightTable::~FlightTable() {
  std::list<std::pair<std::shared_ptr<Flight>, std::thread>> threads;
  {
    std::lock_guard lock(mutex_);
    threads.swap(threads_);
  }
  for (auto& [flight, thread] : threads) thread.join();
}

Result<hub::FetchResult> FlightTable::join(const fetch::FlightKey& key,
                                           const fetch::Request& request, const std::string& client,
                                           const ProgressSink& progress) {
  auto flight = join_or_start(key, request, client);
  std::unique_lock lock(flight->mutex);
  std::uint64_t seen = 0;
  for (;;) {
    flight->cv.wait(lock, [&] {
      return flight->result.has_value() || flight->progress_seq != seen || abandoned_.load();
    });
    if (flight->progress_seq != seen && progress) {
      seen = flight->progress_seq;
      const hub::FetchProgress snapshot = flight->progress;
      lock.unlock();
      progress(snapshot);
      lock.lock();
      continue;
    }
    seen = flight->progress_seq;
    if (flight->result) return *flight->result;
    if (abandoned_.load()) {
      return fail(ErrorCode::shutting_down,
                  "kernelhubd is stopping, and the download of " + request.describe() +
                      " did not finish within its shutdown grace: retry once kernelhubd is back "
                      "(nothing half-downloaded is published)");
    }
  }
}

std::shared_ptr<FlightTable::Flight> FlightTable::join_or_start(const fetch::FlightKey& key,
                                                                const fetch::Request& request,
                                                                const std::string& client) {
  std::lock_guard lock(mutex_);
  for (auto it = threads_.begin(); it != threads_.end();) {  // reap finished flights
    if (it->first->finished) {
      it->second.join();
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
  // A flight that already has its result is not joined: its answer may predate what this
  // request must see (a resolve_ttl of 0, or a Hub that has changed since).
  if (const auto it = flights_.find(key); it != flights_.end()) {
    std::lock_guard settled(it->second->mutex);
    if (!it->second->result) return it->second;
  }
  auto flight = std::make_shared<Flight>();
  flights_.insert_or_assign(key, flight);
  ++running_;
  const std::uint64_t ticket = next_ticket_++;
  counters_.flights.fetch_add(1, std::memory_order_relaxed);
  counters_.flights_active.fetch_add(1, std::memory_order_relaxed);
  threads_.emplace_back(flight, std::thread([this, flight, key, ticket, request, client] {
                          fly(flight, key, ticket, request, client);
                        }));
  return flight;
}

void FlightTable::fly(const std::shared_ptr<Flight>& flight, const fetch::FlightKey& key,
                      std::uint64_t ticket, const fetch::Request& request,
                      const std::string& client) {
  const bool turn = wait_turn(ticket);
  std::optional<Result<hub::FetchResult>> result;
  if (turn) {
    const auto started = std::chrono::steady_clock::now();
    result.emplace(run_(key, request, client, [&flight](const hub::FetchProgress& p) {
      std::lock_guard lock(flight->mutex);
      flight->progress = p;
      ++flight->progress_seq;
      flight->cv.notify_all();
    }));
    counters_.observe_flight(std::chrono::steady_clock::now() - started);
  } else {
    result.emplace(fail(ErrorCode::shutting_down, "kernelhubd is stopping; retry shortly"));
  }
  // Before the key leaves the table: a later request finds what landed_ kept, or starts a
  // new flight.
  if (*result) landed_(key, result->value());
  {
    std::lock_guard lock(flight->mutex);
    flight->result = std::move(result);
    flight->cv.notify_all();
  }
  std::lock_guard done(mutex_);
  if (const auto it = flights_.find(key); it != flights_.end() && it->second == flight) {
    flights_.erase(it);
  }
  flight->finished = true;
  counters_.flights_active.fetch_sub(1, std::memory_order_relaxed);
  --running_;
  if (turn) --downloading_;
  cv_.notify_all();
}

bool FlightTable::wait_turn(std::uint64_t ticket) {
  std::unique_lock lock(mutex_);
  if (downloading_ >= max_downloads_ || ticket != next_turn_) {
    spdlog::info("download #{} waits for a turn ({} of {} running)", ticket, downloading_,
                 max_downloads_);
  }
  cv_.wait(lock,
           [&] { return stop_queued_ || (ticket == next_turn_ && downloading_ < max_downloads_); });
  if (stop_queued_) return false;
  ++next_turn_;
  ++downloading_;
  cv_.notify_all();  // the next ticket may fit too
  return true;
}

void FlightTable::set_max_downloads(std::size_t n) {
  std::lock_guard lock(mutex_);
  max_downloads_ = n == 0 ? 1 : n;
  cv_.notify_all();
}

void FlightTable::stop_queued() {
  std::lock_guard lock(mutex_);
  stop_queued_ = true;
  cv_.notify_all();
}

void FlightTable::abandon_waiters() {
  abandoned_.store(true);
  std::vector<std::shared_ptr<Flight>> flights;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [flight, thread] : threads_) flights.push_back(flight);
  }
  // Under each flight's mutex, so a waiter between its check and its wait still wakes.
  for (const auto& flight : flights) {
    std::lock_guard lock(flight->mutex);
    flight->cv.notify_all();
  }
}

bool FlightTable::wait_downloads(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return cv_.wait_until(lock, deadline, [&] { return running_ == 0; });
}

std::size_t FlightTable::flights() const {
  std::lock_guard lock(mutex_);
  return running_;
}

}  // namespace kernelhub::daemon
