// A small memo for upstream answers: a fresh value is reused until its time is up, and
// callers that ask for a missing key at the same time share one load (so a cold start of
// many clients makes one upstream request). Errors are handed to the callers that waited for
// them and never kept.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <unordered_map>

#include "trust/result.hpp"

namespace kernelhub::daemon {

template <class T>
class CoalescingMemo {
 public:
  using Clock = std::chrono::steady_clock;
  explicit CoalescingMemo(std::size_t max_entries) : max_entries_(max_entries) {}

  // The value for `key`: the memo's while younger than `ttl`, else what `load` returns
  // (called once for all concurrent callers, on the first caller's thread).
  Result<T> get(const std::string& key, Clock::duration ttl,
                const std::function<Result<T>()>& load) {
    std::promise<Result<T>> promise;
    std::unique_lock lock(mutex_);
    if (const auto it = slots_.find(key); it != slots_.end()) {
      if (!it->second.loaded || Clock::now() < it->second.expires) {
        auto shared = it->second.value;
        lock.unlock();
        return shared.get();
      }
      slots_.erase(it);
    }
    if (slots_.size() >= max_entries_) evict_loaded();
    slots_.emplace(key, Slot{promise.get_future().share(), {}, false});
    lock.unlock();

    Result<T> value = load();
    promise.set_value(value);
    lock.lock();
    if (const auto it = slots_.find(key); it != slots_.end()) {
      if (value && ttl > Clock::duration::zero()) {
        it->second.loaded = true;
        it->second.expires = Clock::now() + ttl;
      } else {
        slots_.erase(it);  // errors (and a ttl of 0) are not kept
      }
    }
    return value;
  }

 private:
  struct Slot {
    std::shared_future<Result<T>> value;
    Clock::time_point expires;
    bool loaded = false;  // false while its load runs: callers wait for it
  };
  // Drops every finished entry; loads in progress stay (their callers wait on them).
  void evict_loaded() {
    for (auto it = slots_.begin(); it != slots_.end();) {
      it = it->second.loaded ? slots_.erase(it) : std::next(it);
    }
  }

  std::size_t max_entries_;
  std::mutex mutex_;
  std::unordered_map<std::string, Slot> slots_;
};

}  // namespace kernelhub::daemon
