// Verification of a Sigstore bundle over an artifact, offline, against a pinned trusted
// root, with the checks of sigstore-python's Verifier.verify_artifact in its order:
//   time (RFC 3161 timestamps, Rekor v1 integrated time) -> certificate chain at each time ->
//   SCT -> key usage -> identity -> log key validity -> inclusion proof -> checkpoint -> SET ->
//   timely insertion
//   -> message digest -> artifact signature -> log body.
// The first check that fails is the error: signature_invalid, "<check>: <reason>".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/trust/sigstore/bundle.hpp"
#include "kernelhub/trust/sigstore/identity_policy.hpp"
#include "kernelhub/trust/sigstore/sigstore_time.hpp"
#include "kernelhub/trust/sigstore/trusted_root.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust::sigstore {

struct VerifiedSignature {
  FulcioIdentity identity;
  std::vector<UnixSeconds> verified_times;  // every time the signature was proven to exist at
  std::string leaf_der;                     // the signing certificate
};

Result<VerifiedSignature> verify_artifact(std::string_view artifact, const Bundle& bundle,
                                          const TrustedRoot& root, const IdentityPolicy& policy);

// parse_bundle, then verify_artifact.
Result<VerifiedSignature> verify_artifact_bundle(std::string_view artifact,
                                                 std::string_view bundle_json,
                                                 const TrustedRoot& root,
                                                 const IdentityPolicy& policy);

}  // namespace kernelhub::trust::sigstore
