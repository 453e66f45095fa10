// kernel-builder's metadata.json: every field is optional and unknown fields are allowed
// (older builds carry only python-depends). Per-file digests arrived in 2026-06.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "trust/result.hpp"

namespace kernelhub::trust {

inline constexpr std::size_t kMaxMetadataBytes = 1024 * 1024;

struct KernelMetadata {
  std::optional<std::string> id, name;
  std::optional<int> version;
  std::optional<std::string> digest_algorithm;
  std::map<std::string, std::string> file_digests;  // variant-relative path -> base64 sha256
  bool has_digest() const { return digest_algorithm.has_value(); }
};

// too_large above 1 MiB, malformed_response for bad JSON or wrongly typed known fields,
// unsafe_path for a hostile path in digest.files.
Result<KernelMetadata> parse_kernel_metadata(std::string_view json);

// Files the digest does not cover: top-level metadata.json / metadata.json.sigstore, any
// __pycache__ component, *.pyc.
bool excluded_from_digest(std::string_view relpath);

// Compares a variant's actual files (relpath -> sha256 hex) with metadata.json. No digest
// in the metadata: ok. Algorithm other than sha256: hash_mismatch. A listed file missing:
// entry_not_found; a different digest or an unlisted file: hash_mismatch naming the file.
Result<void> verify_variant_digests(
    const KernelMetadata& metadata,
    const std::map<std::string, std::string>& actual_sha256_hex_by_relpath);

}  // namespace kernelhub::trust
