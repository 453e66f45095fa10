#include "kernelhub/hub/fetcher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "fetch_call.hpp"
#include "fetch_plan.hpp"
#include "kernelhub/cache/disk_full.hpp"
#include "kernelhub/hub/kernel_status.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/util/error_table.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::hub {
namespace {

constexpr auto kStaleTempAge = std::chrono::hours(1);
constexpr int kMaxRedirectHops = 4;
constexpr std::size_t kMaxStatusFile = std::size_t{64} * 1024;

Result<std::string> resolve_commit(HubApi& api, const fetch::Request& request, bool retry) {
  if (const auto version = request.ref.version_number())
    return api.resolve_version(request.repo, *version, retry);
  return api.resolve_revision(request.repo, *request.ref.revision_name(), retry);
}

}  // namespace

Result<void> check_locked_hashes(const fetch::Request& request, const std::string& commit,
                                 const std::string& variant,
                                 const std::vector<std::pair<std::string, std::string>>& files) {
  if (!request.lock() || request.lock()->variant_hashes.empty()) return ok();
  const trust::LockEntry entry{request.repo, std::nullopt, commit, request.lock()->variant_hashes};
  return trust::check_locked_variant(entry, variant, files);
}

bool is_ignored_kernel_file(std::string_view path) {
  if (path.ends_with(".pyc")) return true;
  return path.starts_with("__pycache__/") || path.find("/__pycache__/") != std::string_view::npos;
}

Fetcher::Fetcher(HubConfig config, HttpClient& http, cache::KernelCache& cache,
                 trust::AdminPolicy policy, trust::TrustEnvironment trust_env,
                 util::Environment platform_env)
    : config_(config),
      http_(http),
      cache_(cache),
      policy_(std::move(policy)),
      trust_env_(trust_env),
      platform_env_(std::move(platform_env)),
      api_(std::move(config), http) {
  api_.set_move_check(trusted_moves(policy_, trust_env_));
}

Result<void> check_destination(const trust::AdminPolicy& policy,
                               const trust::TrustEnvironment& trust_env, const trust::RepoId& from,
                               const trust::RepoId& to, std::string_view how) {
  const auto decision = trust::decide_trust(policy, to.org, trust_env);
  if (decision.allowed) return ok();
  return fail(decision.code, from.str() + " " + std::string(how) + " " + to.str() +
                                 ", which is refused: " + decision.reason);
}

HubApi::MoveCheck trusted_moves(const trust::AdminPolicy& policy,
                                const trust::TrustEnvironment& trust_env) {
  // By reference: the policy outlives the HubApi that holds the check (both are members of
  // the object that sets it).
  return [&policy, &trust_env](const trust::RepoId& from, const trust::RepoId& to) {
    return check_destination(policy, trust_env, from, to, "was moved on the Hub to");
  };
}

Result<FetchResult> Fetcher::fetch(const fetch::Request& request,
                                   const ProgressCallback& progress) {
  auto result = FetchCall(*this).fetch_any(request, progress);
  if (!result) return fail(cache::explain_disk_full(std::move(result).error(), cache_.root()));
  return result;
}

Result<FetchResult> FetchCall::fetch_any(const fetch::Request& request,
                                         const ProgressCallback& progress) {
  // The publisher decision comes before any request, cache hits and offline mode included.
  const auto decision = trust::decide_trust(f_.policy_, request.repo.org, f_.trust_env_);
  if (!decision.allowed) return fail(decision.code, decision.reason);
  if (const auto swept = f_.cache_.sweep_stale_temps(kStaleTempAge); swept > 0) {
    spdlog::info("removed {} stale partial download(s) from the cache", swept);
  }
  if (f_.config_.offline) {
    auto cached = fetch_from_cache(request);
    if (!cached && cached.error().code == ErrorCode::offline_not_cached) {
      return fail(ErrorCode::offline_not_cached,
                  "offline mode (HF_HUB_OFFLINE): " + cached.error().message);
    }
    return cached;
  }
  // With a cached snapshot to fall back on, the revision lookup is asked once: no backoff and
  // no Retry-After wait stands between a failing Hub and the cached answer.
  const bool have_cached = has_cached_snapshot(request);
  auto online = fetch_online(request, progress, 0, /*retry_resolve=*/!have_cached);
  // After a refused move the cache was asked for the accepted commit already: no other
  // cached commit (refs/vN may name the refused one) stands in for it.
  if (online || refused_ || !error_info(online.error().code).cache_fallback) return online;
  auto cached = fetch_from_cache(request);
  if (cached) {
    auto& served = cached->manifest;
    served.cache_fallback =
        std::string(to_string(online.error().code)) + ": " + online.error().message;
    spdlog::warn("the Hub could not be used ({}); using the cached snapshot {} of {}",
                 served.cache_fallback, served.commit, request.repo.str());
    return cached;
  }
  // The cached snapshot turned out unusable (damaged, incomplete, another platform): the Hub
  // is then the only source, so it gets its retries.
  if (have_cached) return fetch_online(request, progress);
  return online;
}

Result<std::vector<std::string>> FetchCall::choose_variants(
    const fetch::Request& request, const std::vector<std::string>& names) const {
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  if (const auto named = request.variants.name()) {
    if (std::find(sorted.begin(), sorted.end(), *named) != sorted.end()) return std::vector{*named};
    return fail(ErrorCode::no_matching_variant,
                "variant '" + *named + "' does not exist in " + request.repo.str() +
                    "; available: " + (sorted.empty() ? "none" : util::join(sorted, ", ")));
  }
  if (request.variants.is_all()) {
    if (sorted.empty())
      return fail(ErrorCode::no_matching_variant, request.repo.str() + " has no build variants");
    return sorted;
  }
  variant::Platform platform;
  if (request.target_platform) {
    platform = *request.target_platform;
  } else {
    KH_TRY_ASSIGN(platform, variant::detect_platform(f_.platform_env_, request.platform));
  }
  KH_TRY_ASSIGN(auto chosen, variant::select_variant(sorted, platform));
  return std::vector{chosen};
}

Result<std::optional<fetch::Request>> FetchCall::follow_status_redirect(
    const fetch::Request& request, const std::string& commit, int hops) {
  if (f_.cache_.is_known_missing(request.repo, commit, kKernelStatusFile))
    return std::optional<fetch::Request>();
  KH_TRY_ASSIGN(auto status, f_.api_.read_optional_file(request.repo, commit, kKernelStatusFile,
                                                        kMaxStatusFile));
  if (!status) {
    status_missing_ = true;  // remembered once the fetch has published (see fetch_online)
    return std::optional<fetch::Request>();
  }
  auto redirect = parse_kernel_status(*status);
  if (!redirect)
    return fail(redirect.error().code, request.repo.str() + ": " + redirect.error().message);
  if (!*redirect) return std::optional<fetch::Request>();
  const auto& destination = (*redirect)->destination;
  if (request.lock()) {
    return fail(ErrorCode::not_locked,
                request.repo.str() + "@" + commit + " redirects to " + destination.str() +
                    ", which the lockfile does not pin; lock " + destination.str() + " instead");
  }
  if (hops >= kMaxRedirectHops) {
    return fail(ErrorCode::malformed_response, request.repo.str() + " redirects more than " +
                                                   std::to_string(kMaxRedirectHops) +
                                                   " times (a loop?)");
  }
  // A redirect changes the publisher: the trust decision is taken again for the destination.
  KH_TRY(check_destination(f_.policy_, f_.trust_env_, request.repo, destination, "redirects to"));
  spdlog::warn("{} redirects to {} (revision {})", request.repo.str(), destination.str(),
               (*redirect)->revision);
  KH_TRY_ASSIGN(auto ref, fetch::Ref::revision((*redirect)->revision));
  fetch::Request next(destination, std::move(ref));
  next.variants = request.variants;
  next.platform = request.platform;
  next.target_platform = request.target_platform;
  return std::optional<fetch::Request>(std::move(next));
}

Result<FetchResult> FetchCall::fetch_online(const fetch::Request& asked,
                                            const ProgressCallback& progress, int hops,
                                            bool retry_resolve) {
  if (hops == 0) refused_.reset();  // before anything can fail: fetch() reads it after
  KH_TRY_ASSIGN(auto commit, resolve_commit(f_.api_, asked, retry_resolve));
  KH_TRY_ASSIGN(auto guarded, guard_version_move(asked, commit));
  if (hops > 0 || !refused_) return fetch_commit(asked, guarded, progress, hops);
  // A refused move: the accepted commit, from the cache when it is complete there. The Hub
  // may no longer have it (a force-push), so it is asked only when the cache cannot serve it.
  auto cached = fetch_cached_commit(asked, guarded);
  if (!cached) {
    spdlog::debug("{} is not servable from the cache ({}); asking the Hub", guarded,
                  cached.error().message);
    cached = fetch_commit(asked, guarded, progress, hops);
  }
  if (!cached) return fail(unavailable_after_refusal(cached.error()));
  cached->manifest.refused_move = served_refusal();
  spdlog::warn("{}", cached->manifest.refused_move);
  return cached;
}

Result<FetchResult> FetchCall::fetch_commit(const fetch::Request& asked, const std::string& commit,
                                            const ProgressCallback& progress, int hops) {
  // A renamed or transferred repo (the Hub redirected its API calls, after trusted_moves
  // approved the new name): it is fetched and cached under the name it has now.
  fetch::Request request = asked;
  if (const auto moved = f_.api_.moved_to(asked.repo)) {
    spdlog::warn("{} was moved on the Hub to {}; fetching it from there", asked.repo.str(),
                 moved->str());
    request.repo = *moved;
  }
  status_missing_ = false;
  KH_TRY_ASSIGN(auto redirected, follow_status_redirect(request, commit, hops));
  if (redirected) return fetch_online(*redirected, progress, hops + 1);

  auto build = f_.api_.list_tree(request.repo, commit, "build", false);
  if (!build) {
    if (build.error().code != ErrorCode::entry_not_found) return fail(build.error());
    return fail(ErrorCode::no_matching_variant,
                request.repo.str() + " at " + commit + " has no build/ folder");
  }
  std::vector<std::string> names;
  for (const auto& entry : *build) {
    if (!entry.is_file) names.push_back(entry.path.substr(std::string_view("build/").size()));
  }
  KH_TRY_ASSIGN(auto variants, choose_variants(request, names));
  // Held until this function returns: the plan below sees what an earlier turn published.
  const auto turn =
      f_.download_gate_
          ? f_.download_gate_(request.repo.str() + '@' + commit + ' ' + util::join(variants, ", "))
          : nullptr;
  // Every listing first: a hostile one is refused before anything touches the cache.
  std::vector<std::pair<std::string, std::vector<TreeEntry>>> listings;
  for (const auto& variant : variants) {
    KH_TRY_ASSIGN(auto files, f_.api_.list_tree(request.repo, commit, "build/" + variant, true));
    if (request.lock() && !request.lock()->variant_hashes.empty()) {
      std::vector<std::pair<std::string, std::string>> ids;
      for (const auto& entry : files) {
        if (entry.is_file && !is_ignored_kernel_file(entry.path))
          ids.emplace_back(entry.path, entry.etag());
      }
      KH_TRY(check_locked_hashes(request, commit, variant, ids));
    }
    listings.emplace_back(variant, std::move(files));
  }
  // From the first look at the cached blobs until the refs are written, no eviction or gc
  // touches this repo (a blob it keeps, or one it has committed but not linked yet). A cache
  // where the lock cannot be made is one this process cannot write either: no removal of ours
  // runs there, and a write the fetch needs fails on its own.
  const auto in_use = f_.cache_.hold_repo(request.repo);

  FetchPlan plan(f_.config_, f_.http_, f_.api_, f_.cache_, request.repo, commit);
  plan.set_space_gate(f_.space_gate_);
  receipts_.clear();
  signature_warnings_.clear();
  if (f_.policy_.signatures.mode != trust::SignatureMode::off) {
    KH_TRY_ASSIGN(const auto* verifier, f_.signature_verifier());
    plan.set_signature_hook([&, verifier](const std::string& variant, const std::string& etag,
                                          std::string_view metadata, const BundleBytes& bundle) {
      return admit_signature(request, verifier->verify(variant, etag, metadata, bundle));
    });
  }
  for (const auto& [variant, files] : listings) KH_TRY(plan.add_variant(variant, files));
  KH_TRY(plan.download(progress));
  KH_TRY(plan.verify());
  // Receipts before the snapshot: whatever is visible has its verdict recorded.
  for (const auto& receipt : receipts_) {
    KH_TRY(f_.cache_.write_signature_receipt(request.repo, commit, receipt.variant,
                                             receipt_to_json(receipt)));
  }
  KH_TRY(plan.publish());

  KH_TRY(accept_version(asked, commit));
  // Refs last: `kernels` resolves version N offline from refs/vN.
  if (request.ref.is_version() || !is_commit_sha(request.ref.ref_name())) {
    KH_TRY(f_.cache_.write_ref(request.repo, request.ref.ref_name(), commit));
  }
  // Remembered as huggingface_hub does (.no_exist), so a warm fetch does not ask again; only
  // after a successful publish, so a failed fetch leaves nothing behind.
  if (status_missing_) (void)f_.cache_.mark_missing(request.repo, commit, kKernelStatusFile);
  FetchResult result;
  result.manifest.repo = request.repo;
  result.manifest.commit = commit;
  result.manifest.variants = variants;
  result.manifest.snapshot_path = f_.cache_.snapshot_dir(request.repo, commit);
  result.manifest.files = plan.fetched_files();
  take_signatures(request, result);
  return result;
}

}  // namespace kernelhub::hub
