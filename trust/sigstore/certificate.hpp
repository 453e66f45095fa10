// The signing certificate's checks: its chain to a Fulcio CA of the trusted root at a
// verified time, its embedded SCT, and its key usage. The identity it carries is read in
// identity_policy.hpp.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/trust/sigstore/openssl_handles.hpp"
#include "kernelhub/trust/sigstore/public_key.hpp"
#include "kernelhub/trust/sigstore/sigstore_time.hpp"
#include "kernelhub/trust/sigstore/trusted_root.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust::sigstore {

// The chain above `leaf` (issuer first, root last) from the first CA of `authorities` that
// is valid at `time` and under which `leaf` verifies at `time`. Each CA is tried on its
// own, so two intermediates with one subject name cannot be confused: the issuer is the one
// whose key verifies. signature_invalid naming the last OpenSSL reason otherwise.
Result<std::vector<SharedX509>> verify_chain_at(X509* leaf,
                                                std::span<const CertificateAuthority> authorities,
                                                UnixSeconds time);

// The embedded precertificate SCT (RFC 6962 §3.2): exactly one, SHA-256, signed by a CT log
// key of the trusted root over the leaf's TBS without the SCT list and the issuer's key
// hash. `chain` is what verify_chain_at returned.
Result<void> verify_embedded_sct(X509* leaf, std::string_view leaf_der,
                                 std::span<const SharedX509> chain,
                                 std::span<const LogKey> ct_logs);

// KeyUsage digitalSignature and ExtendedKeyUsage codeSigning, both present.
Result<void> check_leaf_usage(X509* leaf);

// The leaf's notBefore..notAfter.
Result<TimeRange> certificate_validity(X509* cert);

}  // namespace kernelhub::trust::sigstore
