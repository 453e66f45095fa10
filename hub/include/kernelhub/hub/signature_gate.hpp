// Signatures of kernel variants (`build/<variant>/metadata.json.sigstore`), in two steps:
//  - verify, once, when a variant is downloaded (before it is published) or when no
//    trustworthy receipt exists: the Sigstore bundle over the raw metadata.json against the
//    admin's trusted root, with the signer's identity recorded rather than judged; the
//    result is a receipt, kept in the cache's state;
//  - decide, at every hand-out, from the receipt and the policy in force now: the
//    publisher's configured identity, the binding of the signed metadata.json to the
//    request (its version, its backend), and the mode (off / warn / enforce). A policy
//    change therefore applies to kernels already cached, offline too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/trust/signature_settings.hpp"
#include "kernelhub/trust/sigstore/identity_policy.hpp"
#include "kernelhub/trust/sigstore/trusted_root.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub {

inline constexpr std::string_view kSignatureBundleFile = "metadata.json.sigstore";

struct SignatureReceipt {
  enum class Status { verified, missing, invalid };
  Status status = Status::missing;
  std::string variant;
  std::string metadata_etag;                  // the metadata.json blob the verdict is about
  std::string root_id;                        // sha256 of the trusted root it was verified against
  std::string failure;                        // missing / invalid: "<check>: <reason>"
  trust::sigstore::FulcioIdentity identity;   // verified only
  std::int64_t signed_at = 0;                 // verified only
  std::optional<std::string> stated_version;  // the signed metadata.json's "version"
  std::optional<std::string> stated_backend;  // ... and its backend.type
};

// The receipt as stored (JSON, one parser), and back; nullopt for anything malformed.
std::string receipt_to_json(const SignatureReceipt& receipt);
std::optional<SignatureReceipt> receipt_from_json(std::string_view text);

// The id receipts record for the trusted root `settings` names: the SHA-256 of its JSON.
// Cheap (no key or certificate is decoded): a receipt is matched against it before anything
// is parsed. ErrorCode::policy when the root cannot be read.
Result<std::string> trusted_root_id(const trust::SignatureSettings& settings);

// A variant's metadata.json.sigstore as found: nullopt when the variant has none, else its
// bytes, or why they could not be had (over the size cap, not a regular file). That error
// is a verdict, not a failed fetch: the receipt is invalid, so warn serves the variant with
// a warning and enforce refuses it, as for any other bundle that does not hold.
using BundleBytes = Result<std::optional<std::string>>;

class SignatureVerifier {
 public:
  // The trusted root the settings name; ErrorCode::policy when it cannot be loaded.
  static Result<SignatureVerifier> load(const trust::SignatureSettings& settings);

  // metadata.json is parsed (for the binding fields) only once its signature holds.
  SignatureReceipt verify(std::string variant, std::string metadata_etag,
                          std::string_view metadata_json, const BundleBytes& bundle_json) const;
  // verify() over the cached snapshot's build/<variant>/metadata.json and its bundle (each
  // read within its bound); the etag is the blob the metadata.json link names.
  SignatureReceipt verify_cached(const cache::KernelCache& cache, const trust::RepoId& repo,
                                 const std::string& commit, const std::string& variant) const;

 private:
  std::shared_ptr<const trust::sigstore::TrustedRoot> root_;
  std::string root_id_;
};

// Whether the trusted root `settings` names can be used (nothing to check when the mode is
// off): read (a regular file, within its bound) and parsed. ErrorCode::policy naming why.
Result<void> check_signature_settings(const trust::SignatureSettings& settings);

// The admin policy file (trust::load_policy_file) with the files it names checked now
// (check_signature_settings): kernelhubd at start-up and at every reload, the CLI and the
// embedded client when they load one. So a policy whose trusted root is a FIFO, too large
// or not a root never comes into force, rather than failing (or, before, hanging) at a
// fetch.
Result<trust::AdminPolicy> load_checked_policy(const std::filesystem::path& path);

// The verdict on `receipt` for `repo` requested as version `requested_version` (nullopt
// for a revision): nullopt when it may be served silently (mode off, or it holds), a
// warning line in warn mode, else signature_missing / signature_invalid naming the failed
// check ([signatures] enforce).
Result<std::optional<std::string>> decide_signature(const trust::SignatureSettings& settings,
                                                    const trust::RepoId& repo,
                                                    const SignatureReceipt& receipt,
                                                    std::optional<int> requested_version);

}  // namespace kernelhub::hub
