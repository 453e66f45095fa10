// Private to the test Hub: the fault plan as hooks of a HubServer (serve_hooks.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/hub/server/local_store.hpp"
#include "kernelhub/hub/server/serve_hooks.hpp"
#include "support/fault_hub/fault_hub.hpp"

namespace kernelhub::testing {

class FaultHooks final : public hub::server::ServeHooks {
 public:
  FaultHooks(std::filesystem::path store_root, bool test_endpoints)
      : store_(std::move(store_root)), test_endpoints_(test_endpoints) {}

  void add_routes(httplib::Server& server) override;
  bool before_route(const httplib::Request& req, httplib::Response& res) override;
  void after_route(const httplib::Request& req, httplib::Response& res) override;
  bool before_file(const httplib::Request& req, httplib::Response& res,
                   const hub::server::FileDownload& file) override;
  void shape_body(const hub::server::FileDownload& file, hub::server::FileBody& body) override;
  void stopping() override;

  void set_plan(const FaultPlan& plan);
  FaultPlan plan() const;
  std::vector<RequestRecord> records() const;
  void reset_records();
  // Recorded requests whose method is `method` (any when empty) and whose path contains
  // `path_part`.
  std::size_t count_records(const std::string& method, const std::string& path_part) const;
  // Waits until `n` recorded requests match (method, any when empty; path containing
  // `path_part`), up to `timeout`; false when it timed out or the server is stopping.
  bool wait_records(const std::string& method, const std::string& path_part, std::size_t n,
                    std::chrono::milliseconds timeout) const;
  std::uint64_t paced_bytes() const { return paced_bytes_; }

  // Slow-upstream helpers (slow_faults.cpp). Sleeps `total` in short steps; false when the
  // server is stopping.
  bool sleep_unless_stopping(std::chrono::milliseconds total) const;
  // Bytes to send next under a trickle of `rate` bytes/s (at most `want`); sleeps for their
  // share of a second first. false when the server is stopping.
  bool trickle_step(std::uint64_t rate, std::size_t& want) const;
  void add_paced(std::uint64_t bytes) const { paced_bytes_ += bytes; }

 private:
  // Takes one 429/503 from the plan if any are left and `path` matches fail_path_filter.
  std::optional<FaultPlan> take_failure(const std::string& path);
  // The download faults that apply to `repo_path`; consumes one reset when `consume`.
  FaultPlan download_faults(const std::string& repo_path, bool consume);
  // Renames, anonymous 401s and model-only repos (repo_faults.cpp); true when it answered.
  bool answer_repo_faults(const FaultPlan& plan, const httplib::Request& req,
                          httplib::Response& res) const;
  // Swaps a finished /api/ reply's body for one that stalls, trickles or never ends.
  void apply_api_slow_faults(const FaultPlan& plan, const httplib::Request& req,
                             httplib::Response& res);

  hub::server::LocalStore store_;
  bool test_endpoints_;
  std::atomic<bool> stopping_{false};
  mutable std::atomic<std::uint64_t> paced_bytes_{0};
  mutable std::mutex mutex_;  // guards plan_ and records_
  mutable std::condition_variable recorded_;
  FaultPlan plan_;
  std::vector<RequestRecord> records_;
};

// Whether the plan's slow knobs act on file downloads / on an /api/ reply at `path`.
bool slow_faults_for_files(const FaultPlan& plan);
bool slow_faults_for_api(const FaultPlan& plan, const std::string& request_path);

}  // namespace kernelhub::testing
