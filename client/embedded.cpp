#include "embedded.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernelhub/cache/bundle/bundle_import.hpp"
#include "kernelhub/cache/cache_json.hpp"
#include "kernelhub/cache/handout.hpp"
#include "kernelhub/cache/maintenance.hpp"
#include "kernelhub/cache/pinning.hpp"
#include "kernelhub/cache/usage.hpp"
#include "kernelhub/hub/http.hpp"
#include "kernelhub/hub/hub_config.hpp"
#include "kernelhub/hub/import_signatures.hpp"
#include "kernelhub/hub/receipt_check.hpp"
#include "kernelhub/hub/signature_gate.hpp"

namespace kernelhub::client {

namespace {

// The cache's one hand-out (cache::open_handout), beneath the user's cache root; a root that
// is itself a symlink is the user's own choice and is followed.
Result<std::vector<UniqueFd>> hand_out_files(const cache::KernelCache& cache,
                                             const fetch::Manifest& manifest) {
  const UniqueFd root(::open(cache.root().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    return fail(ErrorCode::io,
                "cannot open the cache " + cache.root().string() + ": " + std::strerror(errno));
  }
  std::vector<cache::HandoutFile> wanted;
  wanted.reserve(manifest.files.size());
  for (const auto& file : manifest.files) wanted.push_back({file.path, file.etag, file.size});
  return cache::open_handout(root.get(), manifest.repo, manifest.commit, wanted);
}

std::optional<std::filesystem::path> policy_file_of(const util::Environment& env,
                                                    const ClientOptions& options) {
  if (options.policy_file) return options.policy_file;
  if (auto from_env = env.get("KERNELHUB_POLICY")) return std::filesystem::path(*from_env);
  return std::nullopt;
}
}  // namespace

EmbeddedBackend::EmbeddedBackend(const util::Environment& env, const ClientOptions& options)
    : env_(env),
      cache_(options.cache_dir ? *options.cache_dir : cache::resolve_cache_root(env)),
      policy_file_(policy_file_of(env, options)) {}

Result<trust::AdminPolicy> EmbeddedBackend::load_policy() const {
  if (!policy_file_) return trust::AdminPolicy{};
  return hub::load_checked_policy(*policy_file_);
}

Result<FetchedKernel> EmbeddedBackend::fetch(const fetch::Request& request,
                                             const hub::ProgressCallback& progress, bool hand_out) {
  KH_TRY_ASSIGN(auto policy, load_policy());
  const auto config = hub::HubConfig::from(env_);
  hub::CurlHttpClient http(config);
  hub::Fetcher fetcher(config, http, cache_, std::move(policy), trust::TrustEnvironment::from(env_),
                       env_);
  KH_TRY_ASSIGN(auto result, fetcher.fetch(request, progress));

  FetchedKernel kernel{std::move(result.manifest), /*via_daemon=*/false, {}};
  if (hand_out) {
    // Held through the hand-out: no gc of another process removes what is being opened. (Taken
    // only now, so a refused request leaves nothing in the cache; best effort, as in the
    // fetcher.) An eviction that came between the fetch and the hold is met by one more
    // fetch, held.
    const auto in_use = cache_.hold_repo(kernel.manifest.repo);
    auto fds = hand_out_files(cache_, kernel.manifest);
    if (!fds && in_use) {
      KH_TRY_ASSIGN(result, fetcher.fetch(request, progress));
      kernel.manifest = std::move(result.manifest);
      fds = hand_out_files(cache_, kernel.manifest);
    }
    KH_TRY_ASSIGN(kernel.fds, std::move(fds));
  }
  // The use, for eviction by least recent use; a read-only cache keeps none.
  const auto now = cache::WallClock::now();
  for (const auto& variant : kernel.manifest.variants) {
    (void)cache::record_use(cache_, {kernel.manifest.repo, kernel.manifest.commit, variant}, now);
  }
  return kernel;
}

Result<nlohmann::json> EmbeddedBackend::status() const {
  return nlohmann::json{{"mode", "embedded"}, {"cache_root", cache_.root().string()}};
}

Result<nlohmann::json> EmbeddedBackend::ls() const {
  KH_TRY_ASSIGN(auto repos, cache_.list());
  return nlohmann::json{{"repos", cache::cached_repos_json(repos)}};
}

Result<nlohmann::json> EmbeddedBackend::verify(const std::optional<trust::RepoId>& repo) const {
  KH_TRY_ASSIGN(auto report, cache::verify_cache(cache_, repo));
  KH_TRY_ASSIGN(auto policy, load_policy());
  KH_TRY_ASSIGN(auto receipts, hub::recheck_receipts(cache_, repo, policy.signatures));
  auto corrupt = nlohmann::json::array();
  for (const auto& blob : report.corrupt) {
    corrupt.push_back({{"repo", blob.repo}, {"blob", blob.blob}, {"reason", blob.reason}});
  }
  return nlohmann::json{{"checked", report.checked},
                        {"corrupt", std::move(corrupt)},
                        {"receipts_checked", receipts.checked},
                        {"receipts_changed", receipts.changed}};
}

Result<nlohmann::json> EmbeddedBackend::import_bundle(int fd) const {
  cache::bundle::ImportOptions options;
  KH_TRY_ASSIGN(options.policy, load_policy());
  options.trust_env = trust::TrustEnvironment::from(env_);
  KH_TRY_ASSIGN(options.signature_check, hub::import_signature_check(options.policy.signatures));
  KH_TRY_ASSIGN(auto imported, cache::bundle::import_bundle(fd, cache_, options));
  return cache::bundle::imported_json(imported, cache_);
}

Result<nlohmann::json> EmbeddedBackend::gc(const GcOptions& options) const {
  cache::EvictionOptions eviction;
  if (options.bounds.bounded()) {
    eviction.limits = options.bounds;
  } else if (policy_file_) {
    KH_TRY_ASSIGN(const auto policy, load_policy());
    eviction.limits = policy.cache;
  }
  eviction.dry_run = options.dry_run;
  KH_TRY_ASSIGN(auto report, cache::collect_garbage(cache_, eviction));
  return cache::gc_report_json(report, options.dry_run);
}

Result<nlohmann::json> EmbeddedBackend::pin(const PinOptions& options) const {
  KH_TRY_ASSIGN(const auto policy, load_policy());
  const cache::PinSpec spec{options.repo, options.revision, options.variants, options.source,
                            "uid " + std::to_string(::geteuid())};
  KH_TRY(cache::pin_revision(cache_, spec, policy.cache.max_size));
  return nlohmann::json{{"repos", cache::pins_listing_json(cache_)}, {"removed", 0}};
}

Result<nlohmann::json> EmbeddedBackend::unpin(const trust::RepoId& repo,
                                              const std::optional<std::string>& revision) const {
  KH_TRY_ASSIGN(const auto removed, cache::remove_pins(cache_, repo, revision));
  return nlohmann::json{{"repos", cache::pins_listing_json(cache_)}, {"removed", removed}};
}

Result<nlohmann::json> EmbeddedBackend::pins() const {
  return nlohmann::json{{"repos", cache::pins_listing_json(cache_)}, {"removed", 0}};
}

}  // namespace kernelhub::client
