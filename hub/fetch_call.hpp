// Private to kh_hub: one fetch of a Fetcher (fetcher.hpp), from the trust decision to the
// published snapshot, with everything that fetch learns on the way held here, per call.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernelhub/hub/fetcher.hpp"

namespace kernelhub::hub {

class FetchCall {
 public:
  explicit FetchCall(Fetcher& fetcher) : f_(fetcher) {}
  FetchCall(const FetchCall&) = delete;
  FetchCall& operator=(const FetchCall&) = delete;

  // Fetcher::fetch() without the advice a full cache's error gets there.
  Result<FetchResult> fetch_any(const fetch::Request& request, const ProgressCallback& progress);

 private:
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
  // Keeps the receipt for the result and applies the policy: enforce refuses, warn warns.
  Result<void> admit_signature(const fetch::Request& request, SignatureReceipt receipt);
  // A cached variant's receipt, verified again from its cached bundle when it is missing,
  // untrusted or stale (another metadata.json, another trusted root), then admitted.
  Result<void> check_cached_signature(const fetch::Request& request, const std::string& commit,
                                      const std::string& variant,
                                      const std::vector<fetch::ManifestFile>& files);
  // Moves this fetch's receipts and warnings into `result`, with the version they were bound
  // to (`request`'s).
  void take_signatures(const fetch::Request& request, FetchResult& result);

  Fetcher& f_;
  bool status_missing_ = false;  // this fetch's repo has no kernel-status.toml
  struct RefusedMove {
    std::string what;  // "org/name vN"
    std::string offered;
    std::string accepted;
  };
  std::optional<RefusedMove> refused_;      // this fetch's refused vN move, if any
  std::vector<SignatureReceipt> receipts_;  // this fetch's, in variant order
  std::vector<std::string> signature_warnings_;
};

}  // namespace kernelhub::hub
