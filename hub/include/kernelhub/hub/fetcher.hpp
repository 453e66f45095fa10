// The fetch pipeline: trust decision first, then version/revision -> commit, build/ variant
// choice, download of only what the cache lacks, verification against metadata.json, and
// an all-or-nothing publish (blobs, snapshot symlinks, refs last). Offline mode, network
// failures and Hub HTTP errors are served from a complete cached snapshot.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/fetch/request.hpp"
#include "kernelhub/hub/http.hpp"
#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/hub/hub_config.hpp"
#include "kernelhub/hub/progress.hpp"
#include "kernelhub/hub/signature_gate.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/variant/variant.hpp"

namespace kernelhub::hub {

struct FetchedFile {
  std::string path;  // repo-relative, e.g. build/<variant>/__init__.py
  std::string etag;
  std::uint64_t size = 0;
  std::string sha256;  // hex
};

struct FetchResult {
  trust::RepoId repo;
  std::string commit;
  std::vector<std::string> variants;
  std::filesystem::path snapshot_path;  // snapshots/<commit>; variants under build/
  std::vector<FetchedFile> files;
  bool from_cache = false;  // served without contacting the Hub
  // Non-empty when the Hub failed (unreachable, 5xx, 429, 401, ...) and the cached snapshot
  // was served instead: the Hub's error, for the user to see.
  std::string cache_fallback;
  // Non-empty when the Hub moved the requested vN to a commit that does not descend from the
  // one accepted before: what was refused (the accepted commit was served instead).
  std::string refused_move;
  // [signatures] (mode not off): one receipt per served variant, and the warnings warn mode
  // gives for the ones that do not hold (enforce refuses those instead).
  std::vector<SignatureReceipt> signatures;
  std::vector<std::string> signature_warnings;
  // The version the signed metadata.json must state: the requested vN (none for a revision,
  // or once a kernel-status.toml redirect has left the requested repo).
  std::optional<int> signed_version;
};

// How much of a commit's history is read to decide whether a vN move goes forward.
inline constexpr std::size_t kMaxHistoryCommits = 10'000;

class Fetcher {
 public:
  // `platform_env` feeds variant::detect_platform (torch version, backend) when a request has no
  // target_platform; pass the process environment at the edges.
  Fetcher(HubConfig config, HttpClient& http, cache::KernelCache& cache, trust::AdminPolicy policy,
          trust::TrustEnvironment trust_env, util::Environment platform_env = {});
  Fetcher(const Fetcher&) = delete;  // api_ calls back into this object
  Fetcher& operator=(const Fetcher&) = delete;

  Result<FetchResult> fetch(const fetch::Request& request, const ProgressCallback& progress = {});

  // Fetchers sharing one cache (kernelhubd's flights) take turns at the download and publish
  // of one resolved (repo, commit, variants): `gate(key)` blocks while another holds `key`
  // and returns a token held until this fetch has published, so a request that named the
  // same commit differently (v1 and v3, a version and its sha) finds the blobs cached.
  using DownloadGate = std::function<std::shared_ptr<void>(const std::string& key)>;
  void set_download_gate(DownloadGate gate) { download_gate_ = std::move(gate); }

 private:
  // fetch() without the advice a full cache's error gets there.
  Result<FetchResult> fetch_any(const fetch::Request& request, const ProgressCallback& progress);
  // `hops`: redirects followed so far (bounded, each trust-checked). retry_resolve=false: the
  // revision/refs lookup gets one attempt (a cached snapshot can answer instead).
  Result<FetchResult> fetch_online(const fetch::Request& request, const ProgressCallback& progress,
                                   int hops = 0, bool retry_resolve = true);
  // The rest of fetch_online once `commit` is decided (the rollback guard's choice): the
  // repo's move and kernel-status redirect, the listing, the download and the publish.
  Result<FetchResult> fetch_commit(const fetch::Request& asked, const std::string& commit,
                                   const ProgressCallback& progress, int hops);
  // The destination request when the repo's kernel-status.toml redirects, after the trust
  // decision for the destination's publisher; nullopt when there is no redirect.
  Result<std::optional<fetch::Request>> follow_status_redirect(const fetch::Request& request,
                                                               const std::string& commit, int hops);
  Result<FetchResult> fetch_from_cache(const fetch::Request& request);
  // The same for one given commit of the request's repo (the one the rollback guard kept).
  Result<FetchResult> fetch_cached_commit(const fetch::Request& request, const std::string& commit);
  // The commit to serve for a version request the Hub resolved to `offered`: `offered` when
  // nothing was accepted for that vN yet, when it descends from the accepted commit, or when
  // the admin policy allows rollbacks; else the accepted commit, with the refusal recorded
  // (refused_, the cache's version state).
  Result<std::string> guard_version_move(const fetch::Request& request, const std::string& offered);
  // A refused move once the accepted commit is served: the result's refused_move (and a
  // warning), which says what is served. And the error when it cannot be served: the move
  // was refused, and `why` the accepted commit is not available (its code is kept).
  std::string served_refusal() const;
  Error unavailable_after_refusal(const Error& why) const;
  // After a successful publish: the served commit becomes the accepted one.
  Result<void> accept_version(const fetch::Request& request, const std::string& served);
  // Cheap: the cache names a commit for the request and holds its snapshot's build/ folder
  // (fetch_from_cache still proves it complete before serving it).
  bool has_cached_snapshot(const fetch::Request& request) const;
  Result<std::vector<std::string>> choose_variants(const fetch::Request& request,
                                                   const std::vector<std::string>& names) const;
  // [signatures] (hub/fetch_signatures.cpp): the policy's trusted root, loaded on first use.
  Result<const SignatureVerifier*> signature_verifier();
  // Keeps the receipt for the result and applies the policy: enforce refuses, warn warns.
  Result<void> admit_signature(const fetch::Request& request, SignatureReceipt receipt);
  // A cached variant's receipt, verified again from its cached bundle when it is missing,
  // untrusted or stale (another metadata.json, another trusted root), then admitted.
  Result<void> check_cached_signature(const fetch::Request& request, const std::string& commit,
                                      const std::string& variant,
                                      const std::vector<FetchedFile>& files);
  // Moves this fetch's receipts and warnings into `result`, with the version they were bound
  // to (`request`'s).
  void take_signatures(const fetch::Request& request, FetchResult& result);

  HubConfig config_;
  HttpClient& http_;
  cache::KernelCache& cache_;
  trust::AdminPolicy policy_;
  trust::TrustEnvironment trust_env_;
  util::Environment platform_env_;
  bool status_missing_ = false;  // this fetch's repo has no kernel-status.toml
  struct RefusedMove {
    std::string what;  // "org/name vN"
    std::string offered;
    std::string accepted;
  };
  std::optional<RefusedMove> refused_;  // this fetch's refused vN move, if any
  std::optional<SignatureVerifier> signature_verifier_;
  std::vector<SignatureReceipt> receipts_;  // this fetch's, in variant order
  std::vector<std::string> signature_warnings_;
  DownloadGate download_gate_;
  HubApi api_;
};

// The one trust decision for a repo that `from` leads to (kernel-status.toml redirect, or a
// rename or transfer on the Hub), taken before anything is asked of `to`; `how` says which
// ("redirects to", "was moved on the Hub to").
Result<void> check_destination(const trust::AdminPolicy& policy,
                               const trust::TrustEnvironment& trust_env, const trust::RepoId& from,
                               const trust::RepoId& to, std::string_view how);
// A HubApi move check that applies check_destination to renames and transfers.
HubApi::MoveCheck trusted_moves(const trust::AdminPolicy& policy,
                                const trust::TrustEnvironment& trust_env);

// A legacy lock's hash for `variant` against its files (repo path, object id); ok when the
// request carries no hashes.
Result<void> check_locked_hashes(const fetch::Request& request, const std::string& commit,
                                 const std::string& variant,
                                 const std::vector<std::pair<std::string, std::string>>& files);

// Files the `kernels` library never downloads (*.pyc, __pycache__/).
bool is_ignored_kernel_file(std::string_view path);

}  // namespace kernelhub::hub
