#include "kernelhub/daemon/fetch_service.hpp"

#include <spdlog/spdlog.h>

#include "hand_out.hpp"
#include "kernelhub/daemon/upstream_http.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/util/error_table.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::daemon {

namespace fs = std::filesystem;

struct FetchService::Flight {
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<Result<hub::FetchResult>> result;  // set once: the flight is done
  hub::FetchProgress progress;
  std::uint64_t progress_seq = 0;
  bool finished = false;  // its thread is about to exit (guarded by flights_mutex_)
};

void log_unserved(std::string_view asked, std::string_view client, const Error& error) {
  // A policy decision is what an operator filters for (warning).
  if (kind_of(error.code) == ErrorKind::refusal) {
    spdlog::warn("refused {} for {}: {}: {}", asked, client, to_string(error.code), error.message);
  } else {
    spdlog::info("could not serve {} to {}: {}: {}", asked, client, to_string(error.code),
                 error.message);
  }
}

bool is_signature_error(ErrorCode code) {
  return code == ErrorCode::signature_missing || code == ErrorCode::signature_invalid;
}

bool env_true(const std::map<std::string, std::string>& env, std::string_view key) {
  const auto it = env.find(std::string(key));
  return it != env.end() && util::is_truthy(it->second);
}

trust::TrustEnvironment client_trust(const std::map<std::string, std::string>& env) {
  return {env_true(env, trust::kTrustRemoteKernelsVar),
          env_true(env, trust::kDisableRemoteCodeVar)};
}

FetchService::FetchService(fs::path cache_root, UniqueFd root_fd, util::Environment env,
                           std::chrono::seconds resolve_ttl, AtomicCounters& counters)
    : root_(std::move(cache_root)),
      root_fd_(std::move(root_fd)),
      env_(std::move(env)),
      counters_(counters),
      policy_(std::make_shared<const trust::AdminPolicy>()),
      memo_(resolve_ttl) {}

FetchService::~FetchService() {
  std::list<std::pair<std::shared_ptr<Flight>, std::thread>> threads;
  {
    std::lock_guard lock(flights_mutex_);
    threads.swap(flight_threads_);
  }
  for (auto& [flight, thread] : threads) thread.join();
}

void FetchService::set_policy(trust::AdminPolicy policy) {
  auto next = std::make_shared<const trust::AdminPolicy>(std::move(policy));
  std::shared_ptr<const trust::AdminPolicy> previous;
  {
    std::lock_guard lock(policy_mutex_);
    previous = std::exchange(policy_, next);
  }
  // Warm manifests carry receipts verified against the old trusted root, or none when
  // signatures were off: such a change makes the next fetch verify again (from the cache).
  // Identities and the mode apply at each hand-out without that.
  const auto& was = previous->signatures;
  const auto& now = next->signatures;
  if (was.trusted_root != now.trusted_root ||
      (was.mode == trust::SignatureMode::off && now.mode != trust::SignatureMode::off)) {
    memo_.forget_all();
  }
}

std::shared_ptr<const trust::AdminPolicy> FetchService::policy() const {
  std::lock_guard lock(policy_mutex_);
  return policy_;
}

Result<HandOut> FetchService::fetch(const fetch::Request& request, const ClientContext& client) {
  auto out = fetch_unlogged(request, client);
  if (!out) log_unserved(request.describe(), client.name, out.error());
  return out;
}

Result<HandOut> FetchService::fetch_unlogged(const fetch::Request& request,
                                             const ClientContext& client) {
  const trust::RepoId& repo = request.repo;
  // Only the client's trust variables count, bounded by the admin policy, at every hand-out;
  // the publisher is decided before anything else is looked at.
  const trust::TrustEnvironment& client_env = client.trust;
  const auto decision = trust::decide_trust(*policy(), repo.org, client_env);
  if (!decision.allowed) {
    counters_.trust_refused.fetch_add(1, std::memory_order_relaxed);
    return fail(decision.code, decision.reason);
  }
  // The daemon never selects for its own torch: without the client's platform (a client older
  // than the platform fields sends only what its user typed) only a named variant can be served.
  if (request.variants.is_best() && !request.target_platform) {
    return fail(ErrorCode::invalid_request,
                "the request does not say which torch and backend the client runs (a client "
                "older than this kernelhubd?): upgrade it, or pass --torch-version and --backend "
                "(or --variant); kernelhubd never selects for its own torch");
  }

  // The shared flight follows renames and kernel-status redirects with opt-in granted; the
  // repo it ends on is handed out only if this client may fetch that publisher too.
  const auto may_hand_out = [&](const hub::FetchResult& fetched) -> Result<void> {
    const trust::RepoId& served = fetched.manifest.repo;
    if (served.org == repo.org) return ok();
    const auto moved = trust::decide_trust(*policy(), served.org, client_env);
    if (moved.allowed) return ok();
    counters_.trust_refused.fetch_add(1, std::memory_order_relaxed);
    return fail(moved.code, repo.str() + " now resolves to " + served.str() + ": " + moved.reason);
  };

  const fetch::ResolveKey resolve_key{request.repo, request.ref};
  const fetch::Selection selection = fetch::Selection::of(request);
  if (auto warm = memo_.warm(resolve_key, selection)) {
    KH_TRY(may_hand_out(*warm));
    auto out = hand_out(*warm, root_fd_.get(), *policy(), counters_,
                        {client.id, client.with_fds, /*warm=*/true});
    if (out) {
      counters_.hits.fetch_add(1, std::memory_order_relaxed);
      return out;
    }
    if (is_signature_error(out.error().code)) return out;
    spdlog::warn("cached manifest of {} no longer matches the cache ({}); fetching again",
                 repo.str(), out.error().message);
    memo_.forget_all();
  }

  auto flight = join_or_start({resolve_key, selection, client.offline}, request, client.name);

  // Wait for the shared flight; forward progress from this thread only.
  std::unique_lock lock(flight->mutex);
  std::uint64_t seen = 0;
  for (;;) {
    flight->cv.wait(lock, [&] {
      return flight->result.has_value() || flight->progress_seq != seen || abandoned_.load();
    });
    if (flight->progress_seq != seen && client.progress) {
      seen = flight->progress_seq;
      const hub::FetchProgress snapshot = flight->progress;
      lock.unlock();
      client.progress(snapshot);
      lock.lock();
      continue;
    }
    seen = flight->progress_seq;
    if (flight->result) break;
    if (abandoned_.load()) {
      return fail(ErrorCode::shutting_down,
                  "kernelhubd is stopping, and the download of " + request.describe() +
                      " did not finish within its shutdown grace: retry once kernelhubd is back "
                      "(nothing half-downloaded is published)");
    }
  }
  const Result<hub::FetchResult> result = *flight->result;
  lock.unlock();
  if (!result) {
    if (is_signature_error(result.error().code)) {
      counters_.signatures_refused.fetch_add(1, std::memory_order_relaxed);
    }
    return fail(result.error());
  }
  KH_TRY(may_hand_out(*result));
  return hand_out(*result, root_fd_.get(), *policy(), counters_,
                  {client.id, client.with_fds, /*warm=*/false});
}

std::shared_ptr<FetchService::Flight> FetchService::join_or_start(const fetch::FlightKey& key,
                                                                  fetch::Request request,
                                                                  std::string client) {
  std::lock_guard lock(flights_mutex_);
  // Reap threads of finished flights.
  for (auto it = flight_threads_.begin(); it != flight_threads_.end();) {
    if (it->first->finished) {
      it->second.join();
      it = flight_threads_.erase(it);
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
  // The download runs on its own thread: a waiter that goes away cancels nothing.
  flight_threads_.emplace_back(
      flight, std::thread([this, flight, key, ticket, request = std::move(request),
                           client = std::move(client)] {
        const bool turn = wait_turn(ticket);
        if (turn) {
          const auto started = std::chrono::steady_clock::now();
          run_flight(flight, request, key.offline, client);
          counters_.observe_flight(std::chrono::steady_clock::now() - started);
        } else {
          std::lock_guard lock(flight->mutex);
          flight->result.emplace(
              fail(ErrorCode::shutting_down, "kernelhubd is stopping; retry shortly"));
          flight->cv.notify_all();
        }
        // Later requests with this key find the warm memo, or start a new
        // flight.
        if (*flight->result) memo_.remember(key, flight->result->value());
        std::lock_guard done(flights_mutex_);
        if (const auto it = flights_.find(key); it != flights_.end() && it->second == flight)
          flights_.erase(it);
        flight->finished = true;
        counters_.flights_active.fetch_sub(1, std::memory_order_relaxed);
        --running_;
        if (turn) --downloading_;
        flights_cv_.notify_all();
      }));
  return flight;
}

void FetchService::run_flight(const std::shared_ptr<Flight>& flight, const fetch::Request& request,
                              bool offline, const std::string& client) {
  std::shared_lock maintenance(maintenance_);
  hub::HubConfig config = hub::HubConfig::from(env_);
  config.offline = config.offline || offline;
  UpstreamHttp http(config, counters_);
  cache::KernelCache cache(root_);
  cache.set_published_blob_mode(0444);  // the shared cache: read-only from the moment it is visible
  // Every waiter passed decide_trust with its own environment before joining; the
  // fetcher re-checks against the admin policy with opt-in granted.
  // No platform environment: every request carries its client's platform (or a variant).
  hub::Fetcher fetcher(config, http, cache, *policy(), trust::TrustEnvironment{true, false},
                       util::Environment{});
  // Single flight by what a request resolved to, not only by how it was named.
  fetcher.set_download_gate([this](const std::string& key) { return commit_turns_.enter(key); });
  hub::FetchProgress last;
  auto result = fetcher.fetch(request, [&](const hub::FetchProgress& p) {
    last = p;
    std::lock_guard lock(flight->mutex);
    flight->progress = p;
    ++flight->progress_seq;
    flight->cv.notify_all();
  });
  if (result && last.files_total > 0) {
    counters_.misses.fetch_add(1, std::memory_order_relaxed);
    counters_.bytes_downloaded.fetch_add(last.bytes_done, std::memory_order_relaxed);
    counters_.upstream_requests.fetch_add(static_cast<std::uint64_t>(last.files_total),
                                          std::memory_order_relaxed);
  } else if (result) {
    counters_.hits.fetch_add(1, std::memory_order_relaxed);
  }
  const std::string asked = request.describe();
  if (!result) {
    spdlog::warn("download of {} (started for {}) failed: {}: {}", asked, client,
                 to_string(result.error().code), result.error().message);
  } else if (last.files_total > 0) {
    const auto& served = result->manifest;
    spdlog::info("published {}@{} variants {} ({} files, {} bytes; started for {})",
                 served.repo.str(), served.commit, util::join(served.variants, ","),
                 last.files_total, last.bytes_done, client);
  }
  if (result && !result->manifest.refused_move.empty()) {
    counters_.rollbacks_refused.fetch_add(1, std::memory_order_relaxed);
  }
  std::lock_guard lock(flight->mutex);
  flight->result.emplace(std::move(result));
  flight->cv.notify_all();
}

Result<FetchService::VerifyOutcome> FetchService::verify(const std::optional<trust::RepoId>& repo) {
  std::unique_lock lock(maintenance_);
  const cache::KernelCache cache(root_);
  auto blobs = cache::verify_cache(cache, repo);
  if (!blobs) return fail(blobs.error());
  auto receipts = hub::recheck_receipts(cache, repo, policy()->signatures);
  if (!receipts) return fail(receipts.error());
  // Warm manifests carry the receipts they were handed out with.
  if (!blobs->corrupt.empty() || !receipts->changed.empty()) memo_.forget_all();
  return VerifyOutcome{std::move(*blobs), std::move(*receipts)};
}

Result<cache::GcReport> FetchService::gc() {
  std::unique_lock lock(maintenance_);
  auto report = cache::collect_garbage(cache::KernelCache(root_));
  memo_.forget_all();
  return report;
}

bool FetchService::wait_turn(std::uint64_t ticket) {
  std::unique_lock lock(flights_mutex_);
  if (downloading_ >= max_downloads_ || ticket != next_turn_)
    spdlog::info("download #{} waits for a turn ({} of {} running)", ticket, downloading_,
                 max_downloads_);
  flights_cv_.wait(lock, [&] {
    return stop_queued_ || (ticket == next_turn_ && downloading_ < max_downloads_);
  });
  if (stop_queued_) return false;
  ++next_turn_;
  ++downloading_;
  flights_cv_.notify_all();  // the next ticket may fit too
  return true;
}

void FetchService::set_max_downloads(std::size_t n) {
  std::lock_guard lock(flights_mutex_);
  max_downloads_ = n == 0 ? 1 : n;
  flights_cv_.notify_all();
}

void FetchService::abandon_waiters() {
  abandoned_.store(true);
  std::vector<std::shared_ptr<Flight>> flights;
  {
    std::lock_guard lock(flights_mutex_);
    for (const auto& [flight, thread] : flight_threads_) flights.push_back(flight);
  }
  // Under each flight's mutex, so a waiter between its check and its wait still wakes.
  for (const auto& flight : flights) {
    std::lock_guard lock(flight->mutex);
    flight->cv.notify_all();
  }
}

void FetchService::stop_queued() {
  std::lock_guard lock(flights_mutex_);
  stop_queued_ = true;
  flights_cv_.notify_all();
}

bool FetchService::wait_downloads(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(flights_mutex_);
  return flights_cv_.wait_until(lock, deadline, [&] { return running_ == 0; });
}

}  // namespace kernelhub::daemon
