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
#include "kernelhub/fetch/manifest.hpp"
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

// The fetcher's answer: the manifest it served and the signature receipts behind it
// (kernelhubd judges them again at every hand-out, by the policy in force then).
struct FetchResult {
  fetch::Manifest manifest;
  // [signatures] (mode not off): one receipt per served variant; warn mode's warnings for
  // the ones that do not hold are in manifest.signature_warnings (enforce refuses those).
  std::vector<SignatureReceipt> signatures;
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

  // Called before a download with the bytes it will write (the listing's sizes of what the
  // cache lacks), while the repo is held (KernelCache::hold_repo): kernelhubd makes room
  // there. An error stops the fetch before anything is written.
  using SpaceGate = std::function<Result<void>(std::uint64_t bytes)>;
  void set_space_gate(SpaceGate gate) { space_gate_ = std::move(gate); }

 private:
  // Each fetch() runs as its own FetchCall (hub/fetch_call.hpp): what one fetch learns (a
  // refused move, receipts, a missing kernel-status.toml) lives in that value, so a Fetcher
  // can be called again, and again after a failure, without state from the last call.
  friend class FetchCall;
  // [signatures] (hub/fetch_signatures.cpp): the policy's trusted root, loaded on first use.
  Result<const SignatureVerifier*> signature_verifier();

  HubConfig config_;
  HttpClient& http_;
  cache::KernelCache& cache_;
  trust::AdminPolicy policy_;
  trust::TrustEnvironment trust_env_;
  util::Environment platform_env_;
  std::optional<SignatureVerifier> signature_verifier_;
  DownloadGate download_gate_;
  SpaceGate space_gate_;
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
