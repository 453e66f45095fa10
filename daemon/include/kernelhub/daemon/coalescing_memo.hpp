// A small memo for upstream answers: a fresh value is reused until its time is up, and
// callers that ask for a missing key at the same time share one load (so a cold start of
// many clients makes one upstream request). Errors are handed to the callers that waited for
// them; only the Hub's definite "not there" answers (is_definite_miss) are kept, and only for
// the memo's short miss TTL, so a client retrying a wrong name is not one upstream round each
// time. A transient failure (network, timeout, 429, 5xx) is never kept.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <unordered_map>

#include "kernelhub/util/error_table.hpp"

namespace kernelhub::daemon {

// No such repo, revision or file (a 404 in the error table): the Hub's own answer, which only
// a publish changes. A 401 is not: a token can change it.
inline bool is_definite_miss(ErrorCode code) { return error_info(code).http_status == 404; }

template <class T>
class CoalescingMemo {
 public:
  using Clock = std::chrono::steady_clock;
  // miss_ttl: how long a definite miss is kept (zero: never), and never longer than the
  // `ttl` of the get() that loaded it.
  explicit CoalescingMemo(std::size_t max_entries, Clock::duration miss_ttl = {})
      : max_entries_(max_entries), miss_ttl_(miss_ttl) {}

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
      const auto keep = value                                  ? ttl
                        : is_definite_miss(value.error().code) ? std::min(ttl, miss_ttl_)
                                                               : Clock::duration::zero();
      if (keep > Clock::duration::zero()) {
        it->second.loaded = true;
        it->second.expires = Clock::now() + keep;
      } else {
        slots_.erase(it);  // other errors (and a ttl of 0) are not kept
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
  Clock::duration miss_ttl_;
  std::mutex mutex_;
  std::unordered_map<std::string, Slot> slots_;
};

}  // namespace kernelhub::daemon
