// The daemon's fetch pipeline around hub::Fetcher: the trust decision at every hand-out,
// a warm path (version/revision -> commit memo, per-variant manifest, fds opened beneath
// the blobs dir without following links) and single-flight downloads shared by every
// client that asks for the same thing at the same time (and, once resolved, one download of
// a commit for the flights that named it differently).
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelhub/cache/maintenance.hpp"
#include "kernelhub/daemon/cache_keeper.hpp"
#include "kernelhub/daemon/commit_turns.hpp"
#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/daemon/flight_table.hpp"
#include "kernelhub/daemon/manifest_memo.hpp"
#include "kernelhub/fetch/flight_key.hpp"
#include "kernelhub/fetch/manifest.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/hub/receipt_check.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::daemon {

// What a fetch hands out: the manifest and, with_fds, an open descriptor per file.
struct HandOut {
  fetch::Manifest manifest;
  std::vector<UniqueFd> fds;  // fds[i] is manifest.files[i]'s (none without with_fds)
};

// A request's `env` member (the client's variables): one set to a true value, and the
// client's trust variables (still bounded by the admin policy where they are used).
bool env_true(const std::map<std::string, std::string>& env, std::string_view key);
trust::TrustEnvironment client_trust(const std::map<std::string, std::string>& env);

// Who asks, apart from what: the peer's opt-ins and how its answer travels.
struct ClientContext {
  std::string name = "a client";  // in the log: "uid 1000 (pid 42)", "http 127.0.0.1"
  trust::TrustEnvironment trust;  // the client's opt-in, bounded by the admin policy
  bool offline = false;           // the client's HF_HUB_OFFLINE: cache only
  bool with_fds = false;          // open the files for SCM_RIGHTS (not for a prefetch)
  ProgressSink progress;          // may be empty
};
// signature_missing / signature_invalid: a refusal by [signatures], not a damaged cache.
bool is_signature_error(ErrorCode code);
// The one log line of a request not served: a refusal (policy) as a warning, the rest (not
// found, an upstream error its flight logged, a bad request) as routine information.
void log_unserved(std::string_view asked, std::string_view client, const Error& error);

class FetchService {
 public:
  // `record_usage`: see CacheKeeper.
  FetchService(std::filesystem::path cache_root, UniqueFd root_fd, util::Environment env,
               std::chrono::seconds resolve_ttl, AtomicCounters& counters,
               bool record_usage = true);
  ~FetchService() = default;  // flights_ joins every download thread
  FetchService(const FetchService&) = delete;
  FetchService& operator=(const FetchService&) = delete;

  void set_policy(trust::AdminPolicy policy);
  std::shared_ptr<const trust::AdminPolicy> policy() const;

  // Each refusal or failure is logged here once per client (a failed download is also logged
  // once by its flight, as an upstream error).
  Result<HandOut> fetch(const fetch::Request& request, const ClientContext& client);
  struct VerifyOutcome {
    cache::VerifyReport blobs;
    hub::ReceiptReport receipts;
  };
  // Re-hashes the blobs, then verifies every signature receipt again ([signatures]).
  Result<VerifyOutcome> verify(const std::optional<trust::RepoId>& repo);
  // `kernelhub gc`: unreferenced snapshots, then `options.limits` (the policy's [cache] where
  // the request named no bound).
  Result<cache::GcReport> gc(cache::EvictionOptions options = {});
  // The keeper's thread: eviction on its timer and after publishes (the serving daemon).
  void start_cache_keeper() { keeper_.start(); }
  CacheKeeper& cache_keeper() { return keeper_; }
  // Verifies a bundle read from `fd` (a regular file the client opened) and publishes it into
  // the shared cache, with the client's trust variables bounded by the admin policy.
  Result<nlohmann::json> import_bundle(int fd, const std::map<std::string, std::string>& env);

  // Waits for running downloads until `deadline`; true when none is left.
  bool wait_downloads(std::chrono::steady_clock::time_point deadline);

  // At most `n` flights download at once; later ones wait their turn in arrival order, and
  // a request for a kernel already in flight (running or waiting) joins it.
  void set_max_downloads(std::size_t n);
  // Stopping: flights still waiting for a turn end with shutting_down instead of starting.
  void stop_queued();
  // Stopping, once the grace is over: every client still waiting for a flight is answered
  // shutting_down now, before its connection closes (the flights themselves are abandoned).
  void abandon_waiters();

 private:
  Result<HandOut> fetch_unlogged(const fetch::Request& request, const ClientContext& client);
  // A flight's download, on its thread (FlightTable's runner).
  Result<hub::FetchResult> run_flight(const fetch::Request& request, bool offline,
                                      const std::string& client,
                                      const FlightTable::Publish& publish);

  std::filesystem::path root_;
  UniqueFd root_fd_;
  util::Environment env_;
  AtomicCounters& counters_;

  mutable std::mutex policy_mutex_;
  std::shared_ptr<const trust::AdminPolicy> policy_;

  // Downloads hold it shared; verify and gc exclusively, so they never see half a publish.
  std::shared_mutex maintenance_;

  ManifestMemo memo_;  // the warm path

  // Usage, eviction and the cache gauges; after flights_ in destruction (flights use it).
  CacheKeeper keeper_;

  // Flights that resolved to the same (repo, commit, variants) download it one at a time.
  CommitTurns commit_turns_;

  // Last: its destructor joins the flights, which use everything above.
  FlightTable flights_;
};

}  // namespace kernelhub::daemon
