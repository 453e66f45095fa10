// One download at a time per resolved commit: flights that asked for a kernel by different
// names (v1 and v3 on the same commit, a version and its sha) each resolve on their own, then
// take turns at the download of what they resolved to. The second finds the first's blobs in
// the cache and downloads nothing.
#pragma once

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace kernelhub::daemon {

class CommitTurns {
 public:
  // Blocks while another flight holds `key`; the turn ends when the returned token goes.
  // Every holder releases its turn (the token's destructor), so a waiter never waits longer
  // than one fetch's bounded download.
  std::shared_ptr<void> enter(const std::string& key) {
    std::unique_lock lock(mutex_);
    if (held_.count(key) != 0)
      spdlog::info("download of {} waits for the flight already downloading it", key);
    cv_.wait(lock, [&] { return held_.count(key) == 0; });
    held_.insert(key);
    return std::make_shared<Turn>(*this, key);
  }

 private:
  struct Turn {
    Turn(CommitTurns& turns, std::string key) : turns(turns), key(std::move(key)) {}
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    ~Turn() {
      {
        std::lock_guard lock(turns.mutex_);
        turns.held_.erase(key);
      }
      turns.cv_.notify_all();
    }
    CommitTurns& turns;
    std::string key;
  };

  std::mutex mutex_;
  std::condition_variable cv_;
  std::set<std::string> held_;
};

}  // namespace kernelhub::daemon
