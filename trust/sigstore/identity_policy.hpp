// Who signed: the identity a Fulcio certificate carries (SANs and the Fulcio OIDC
// extensions, OIDs 1.3.6.1.4.1.57264.1.*) and the policy it must meet. The policy is what
// sigstore-python's Identity / OIDC* policies check: an exact SAN, the OIDC issuer (v1 raw
// and v2 UTF8String extensions), the source repository URI and one of the allowed build
// signer URIs; each part is checked only when the policy names it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <openssl/x509.h>

#include "trust/result.hpp"

namespace kernelhub::trust::sigstore {

struct FulcioIdentity {
  std::vector<std::string> sans;                 // URIs, e-mails and Sigstore other-names
  std::optional<std::string> issuer_v1;          // .1.1, raw bytes
  std::optional<std::string> issuer_v2;          // .1.8, DER UTF8String
  std::optional<std::string> build_signer_uri;   // .1.9
  std::optional<std::string> source_repository;  // .1.12
};

// signature_invalid ("identity: ...") when a present extension is not of its encoding.
Result<FulcioIdentity> read_fulcio_identity(X509* leaf);

struct IdentityPolicy {
  std::optional<std::string> san;                // one SAN must equal it
  std::optional<std::string> issuer;             // .1.1 and, if present, .1.8 must equal it
  bool require_issuer_v2 = false;                // .1.8 must be present (kernels' policy)
  std::optional<std::string> source_repository;  // .1.12 must equal it
  std::vector<std::string> build_signer_uris;    // .1.9 must equal one of them (when non-empty)
};

// The identity policy `kernels` applies to kernels-community: GitHub Actions OIDC, the
// kernels-community repository, and its four release workflows on main.
IdentityPolicy kernels_community_policy();

// signature_invalid "identity: <what differs>, got '<value>'".
Result<void> check_identity(const FulcioIdentity& identity, const IdentityPolicy& policy);

}  // namespace kernelhub::trust::sigstore
