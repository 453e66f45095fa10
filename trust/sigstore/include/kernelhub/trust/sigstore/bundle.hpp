// A Sigstore bundle (`metadata.json.sigstore`): media types v0.1, v0.2 and v0.3, with a
// `messageSignature` over the raw artifact. Parsing checks shape only (bounded size, depth
// and counts; the fields each version requires); every cryptographic check is the
// verifier's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/trust/sigstore/openssl_handles.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust::sigstore {

enum class BundleVersion { v0_1, v0_2, v0_3 };

struct InclusionProof {
  std::int64_t log_index = 0;
  std::int64_t tree_size = 0;
  std::string root_hash;            // raw bytes
  std::vector<std::string> hashes;  // raw bytes, leaf level first
  std::string checkpoint;           // the signed note, as text
};

struct TlogEntry {
  std::int64_t log_index = 0;
  std::string log_id;                                 // raw key id bytes
  std::string kind;                                   // "hashedrekord"
  std::string version;                                // "0.0.1" (Rekor v1) or "0.0.2" (Rekor v2)
  std::optional<std::int64_t> integrated_time;        // absent or 0 in Rekor v2 entries
  std::optional<std::string> signed_entry_timestamp;  // the SET (raw bytes), Rekor v1
  InclusionProof proof;
  std::string canonicalized_body;  // raw bytes (JSON)
};

struct Bundle {
  BundleVersion version = BundleVersion::v0_3;
  SharedX509 leaf;  // the signing certificate
  std::string leaf_der;
  TlogEntry entry;
  bool has_timestamp_data = false;
  std::vector<std::string> rfc3161_timestamps;  // DER TimeStampResp, raw bytes
  std::optional<std::string> message_digest;    // SHA-256 of the artifact, raw bytes
  std::string signature;                        // over the raw artifact
};

// Bounds of a bundle: real ones are ~5-10 KiB.
inline constexpr std::size_t kMaxBundleBytes = 1u << 20;
inline constexpr std::size_t kMaxTimestamps = 32;   // sigstore-python's MAX_ALLOWED_TIMESTAMP
inline constexpr std::size_t kMaxProofHashes = 64;  // a 2^64-leaf tree needs no more

// signature_invalid, message "bundle: <what>" (a DSSE bundle says it is not supported).
Result<Bundle> parse_bundle(std::string_view json);

}  // namespace kernelhub::trust::sigstore
