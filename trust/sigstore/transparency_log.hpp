// The Rekor entry of a bundle: its RFC 6962 inclusion proof, the signed checkpoint the
// proof's root is committed in (ECDSA for Rekor v1, Ed25519 for Rekor v2 logs), the SET of
// Rekor v1, and the consistency of the logged body with the bundle (CVE-2022-36056: a body
// logged for another artifact, signature or key must not pass).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kernelhub/trust/sigstore/bundle.hpp"
#include "kernelhub/trust/sigstore/public_key.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust::sigstore {

// RFC 6962 §2.1.1: the audit path from SHA-256(0x00 || body) must reach the proof's root.
Result<void> verify_inclusion_proof(const TlogEntry& entry);

// The checkpoint (a signed note) must carry a signature by the entry's log, and state the
// proof's tree size and root hash.
Result<void> verify_checkpoint(const TlogEntry& entry, std::span<const LogKey> logs);

// Rekor v1's inclusion promise: the log's signature over the RFC 8785 JSON of body,
// integratedTime, logID (hex) and logIndex.
Result<void> verify_inclusion_promise(const TlogEntry& entry, std::span<const LogKey> logs);

// The logged hashedrekord (0.0.1 or 0.0.2) names this artifact digest, this signature and
// this signing certificate (`leaf`, parsed from `leaf_der`).
Result<void> check_log_body(const TlogEntry& entry, std::string_view artifact_sha256,
                            std::string_view signature, std::string_view leaf_der, X509* leaf);

}  // namespace kernelhub::trust::sigstore
