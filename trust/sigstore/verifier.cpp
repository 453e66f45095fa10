#include "kernelhub/trust/sigstore/verifier.hpp"

#include "certificate.hpp"
#include "kernelhub/trust/digest.hpp"
#include "timestamp.hpp"
#include "transparency_log.hpp"

namespace kernelhub::trust::sigstore {
namespace {

Unexpected check_failed(std::string_view check, std::string reason) {
  return fail(ErrorCode::signature_invalid, std::string(check) + ": " + std::move(reason));
}

// Every time the signature is proven to have existed at: each timestamp a trusted TSA
// signed, and Rekor v1's integratedTime when an inclusion promise vouches for it (the
// promise itself is verified with the log entry).
Result<std::vector<UnixSeconds>> establish_times(const Bundle& bundle, const TrustedRoot& root) {
  std::vector<UnixSeconds> times;
  std::string timestamp_failure;
  if (bundle.has_timestamp_data) {
    if (root.timestamp_authorities.empty()) {
      return check_failed("time",
                          "the bundle carries signed timestamps but the trusted root has no "
                          "timestamp authority");
    }
    for (const std::string& token : bundle.rfc3161_timestamps) {
      auto time = verify_rfc3161(token, bundle.signature, root.timestamp_authorities);
      if (time) {
        times.push_back(*time);
      } else {
        timestamp_failure = time.error().message;
      }
    }
  }
  const TlogEntry& entry = bundle.entry;
  if (entry.integrated_time && entry.signed_entry_timestamp) {
    if (entry.version != "0.0.1" || (entry.kind != "hashedrekord" && entry.kind != "dsse")) {
      return check_failed("time", "an integrated time is only valid for 0.0.1 log entries");
    }
    times.push_back(*entry.integrated_time);
  }
  if (times.empty()) {
    if (!timestamp_failure.empty()) return fail(ErrorCode::signature_invalid, timestamp_failure);
    return check_failed("time",
                        "no verified source of time (no inclusion promise, no signed "
                        "timestamp)");
  }
  return times;
}

// The entry's log must be one of the trusted root's and its key valid at every verified
// time (a retired log key vouches for nothing logged after its end).
Result<void> verify_log_entry(const TlogEntry& entry, const TrustedRoot& root,
                              const std::vector<UnixSeconds>& times) {
  const LogKey* log = find_log_key(root.tlogs, entry.log_id);
  if (log == nullptr) {
    return check_failed("transparency log", "the entry's log is not in the trusted root");
  }
  for (const UnixSeconds time : times) {
    if (!log->valid_for.contains(time)) {
      return check_failed("transparency log", "the log's key was not valid at the signing time");
    }
  }
  KH_TRY(verify_inclusion_proof(entry));
  KH_TRY(verify_checkpoint(entry, root.tlogs));
  if (entry.signed_entry_timestamp && entry.integrated_time) {
    KH_TRY(verify_inclusion_promise(entry, root.tlogs));
  }
  return {};
}

}  // namespace

Result<VerifiedSignature> verify_artifact(std::string_view artifact, const Bundle& bundle,
                                          const TrustedRoot& root, const IdentityPolicy& policy) {
  X509* leaf = bundle.leaf.get();
  KH_TRY_ASSIGN(auto times, establish_times(bundle, root));

  std::vector<SharedX509> chain;
  for (const UnixSeconds time : times) {
    KH_TRY_ASSIGN(chain, verify_chain_at(leaf, root.certificate_authorities, time));
  }
  KH_TRY(verify_embedded_sct(leaf, bundle.leaf_der, chain, root.ctlogs));
  KH_TRY(check_leaf_usage(leaf));
  KH_TRY_ASSIGN(auto identity, read_fulcio_identity(leaf));
  KH_TRY(check_identity(identity, policy));
  KH_TRY(verify_log_entry(bundle.entry, root, times));

  KH_TRY_ASSIGN(auto validity, certificate_validity(leaf));
  for (const UnixSeconds time : times) {
    if (!validity.contains(time)) {
      return check_failed("timely insertion", "signed at " + std::to_string(time) +
                                                  ", outside the certificate's validity");
    }
  }

  Sha256 hasher;
  hasher.update(artifact);
  const std::vector<unsigned char> digest_bytes = hasher.final_bytes();
  const std::string digest(reinterpret_cast<const char*>(digest_bytes.data()), digest_bytes.size());
  if (bundle.message_digest && *bundle.message_digest != digest) {
    return check_failed("message digest", "the bundle signs another artifact's digest");
  }
  // The artifact is signed over its SHA-256 whatever the curve (a P-384 Fulcio key still
  // signs SHA-256), as sigstore-python and cosign verify it.
  EVP_PKEY* key = X509_get0_pubkey(leaf);
  auto algorithm = key == nullptr ? std::nullopt : key_algorithm_of(key);
  if (algorithm == KeyAlgorithm::ecdsa_sha384 || algorithm == KeyAlgorithm::ecdsa_sha512) {
    algorithm = KeyAlgorithm::ecdsa_sha256;
  }
  if (!algorithm || !verify_signature(key, *algorithm, artifact, bundle.signature)) {
    return check_failed("artifact signature", "the signature does not verify over the artifact");
  }
  KH_TRY(check_log_body(bundle.entry, digest, bundle.signature, bundle.leaf_der, leaf));
  return VerifiedSignature{std::move(identity), std::move(times), bundle.leaf_der};
}

Result<VerifiedSignature> verify_artifact_bundle(std::string_view artifact,
                                                 std::string_view bundle_json,
                                                 const TrustedRoot& root,
                                                 const IdentityPolicy& policy) {
  KH_TRY_ASSIGN(auto bundle, parse_bundle(bundle_json));
  return verify_artifact(artifact, bundle, root, policy);
}

}  // namespace kernelhub::trust::sigstore
