#include "kernelhub/daemon/fetch_service.hpp"

#include <spdlog/spdlog.h>

#include "hand_out.hpp"
#include "kernelhub/daemon/upstream_http.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/util/error_table.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::daemon {

namespace fs = std::filesystem;

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
                           std::chrono::seconds resolve_ttl, AtomicCounters& counters,
                           bool record_usage)
    : root_(std::move(cache_root)),
      root_fd_(std::move(root_fd)),
      env_(std::move(env)),
      counters_(counters),
      policy_(std::make_shared<const trust::AdminPolicy>()),
      memo_(resolve_ttl),
      keeper_(
          root_, maintenance_, counters, [this] { return policy()->cache; }, record_usage),
      flights_(
          [this](const fetch::FlightKey& key, const fetch::Request& request,
                 const std::string& client, const FlightTable::Publish& publish) {
            return run_flight(request, key.offline, client, publish);
          },
          [this](const fetch::FlightKey& key, const hub::FetchResult& result) {
            memo_.remember(key, result);
          },
          counters) {
  // What an eviction removed must not be handed out from the warm path's memory.
  keeper_.set_after_eviction([this] { memo_.forget_all(); });
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
  if (!out) {
    log_unserved(request.describe(), client.name, out.error());
  } else {
    keeper_.record_use(out->manifest);
  }
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
    auto out =
        hand_out(*warm, root_fd_.get(), *policy(), counters_, {client.with_fds, /*warm=*/true});
    if (out) {
      counters_.hits.fetch_add(1, std::memory_order_relaxed);
      return out;
    }
    if (is_signature_error(out.error().code)) return out;
    spdlog::warn("cached manifest of {} no longer matches the cache ({}); fetching again",
                 repo.str(), out.error().message);
    memo_.forget_all();
  }

  const fetch::FlightKey key{resolve_key, selection, client.offline};
  auto result = flights_.join(key, request, client.name, client.progress);
  if (!result) {
    if (is_signature_error(result.error().code)) {
      counters_.signatures_refused.fetch_add(1, std::memory_order_relaxed);
    }
    return fail(result.error());
  }
  KH_TRY(may_hand_out(*result));
  auto out =
      hand_out(*result, root_fd_.get(), *policy(), counters_, {client.with_fds, /*warm=*/false});
  if (out || is_signature_error(out.error().code)) return out;
  // A gc or an eviction took the files between the flight and this hand-out: one more
  // flight (which finds them gone and downloads them again), handed out at once.
  spdlog::info("{} changed in the cache before it was handed out ({}); fetching again",
               request.describe(), out.error().message);
  memo_.forget_all();
  result = flights_.join(key, request, client.name, client.progress);
  if (!result) return fail(result.error());
  KH_TRY(may_hand_out(*result));
  return hand_out(*result, root_fd_.get(), *policy(), counters_, {client.with_fds, /*warm=*/false});
}

Result<hub::FetchResult> FetchService::run_flight(const fetch::Request& request, bool offline,
                                                  const std::string& client,
                                                  const FlightTable::Publish& publish) {
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
  // Room is made before a download that would not fit ([cache] bounds).
  fetcher.set_space_gate([this](std::uint64_t bytes) { return keeper_.make_room(bytes); });
  hub::FetchProgress last;
  const auto on_progress = [&](const hub::FetchProgress& p) {
    last = p;
    publish(p);
  };
  auto result = fetcher.fetch(request, on_progress);
  // The disk filled up all the same (other writers, sizes the listing understated): make
  // room for what this download needed and try once more.
  if (!result && result.error().code == ErrorCode::disk_full && policy()->cache.bounded()) {
    spdlog::warn("download of {} ran out of disk ({}); evicting and retrying once",
                 request.describe(), result.error().message);
    (void)keeper_.make_room(std::max<std::uint64_t>(last.bytes_total, 1), /*disk_said_full=*/true);
    last = {};
    result = fetcher.fetch(request, on_progress);
  }
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
    keeper_.published();
  }
  if (result && !result->manifest.refused_move.empty()) {
    counters_.rollbacks_refused.fetch_add(1, std::memory_order_relaxed);
  }
  return result;
}

Result<FetchService::VerifyOutcome> FetchService::verify(const std::optional<trust::RepoId>& repo) {
  std::unique_lock lock(maintenance_);
  const cache::KernelCache cache(root_);
  KH_TRY_ASSIGN(auto blobs, cache::verify_cache(cache, repo));
  KH_TRY_ASSIGN(auto receipts, hub::recheck_receipts(cache, repo, policy()->signatures));
  // Warm manifests carry the receipts they were handed out with.
  if (!blobs.corrupt.empty() || !receipts.changed.empty()) memo_.forget_all();
  return VerifyOutcome{std::move(blobs), std::move(receipts)};
}

Result<cache::GcReport> FetchService::gc(cache::EvictionOptions options) {
  std::unique_lock lock(maintenance_);
  return keeper_.collect(std::move(options));  // the keeper forgets the memo if it removed any
}

void FetchService::set_max_downloads(std::size_t n) { flights_.set_max_downloads(n); }

void FetchService::stop_queued() { flights_.stop_queued(); }

void FetchService::abandon_waiters() { flights_.abandon_waiters(); }

bool FetchService::wait_downloads(std::chrono::steady_clock::time_point deadline) {
  return flights_.wait_downloads(deadline);
}

}  // namespace kernelhub::daemon
