// Who signed: the identity a Fulcio certificate carries (SANs and the Fulcio OIDC
// extensions, OIDs 1.3.6.1.4.1.57264.1.*) and the check of it against an IdentityPolicy:
// what sigstore-python's Identity / OIDC* policies check, each part only when the policy
// names it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <openssl/x509.h>

#include "kernelhub/trust/signature_settings.hpp"
#include "kernelhub/util/result.hpp"

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

// The policy type lives with the admin settings
// (kernelhub/trust/signature_settings.hpp).
using trust::IdentityPolicy;
using trust::kernels_community_policy;

// signature_invalid "identity: <what differs>, got '<value>'".
Result<void> check_identity(const FulcioIdentity& identity, const IdentityPolicy& policy);

}  // namespace kernelhub::trust::sigstore
