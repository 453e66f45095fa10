// kernel-builder's metadata.json, the one parser for the fetcher, the locker and the loader:
// every field is optional and unknown fields are allowed (older builds carry only
// python-depends); a `kernel-depends` list must be well formed. Per-file digests arrived in
// 2026-06.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/trust/kernel_dependency.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

inline constexpr std::size_t kMaxMetadataBytes = std::size_t{1} << 20;

struct KernelMetadata {
  std::optional<std::string> id;    // the ops namespace: must be a string when present
  std::optional<std::string> name;  // descriptive: a value of another type is ignored
  // kernel-builder writes the major version as an integer (branch v<N>), kept here as its
  // text; local library builds may carry a package version such as "2.7.4". A value of
  // another type is ignored, a negative or huge integer is malformed.
  std::optional<std::string> version;
  // backend.type ("cuda", "cpu", "rocm", ...): descriptive, a value of another type is ignored.
  std::optional<std::string> backend_type;
  std::optional<std::string> digest_algorithm;
  std::map<std::string, std::string> file_digests;  // variant-relative path -> base64 sha256
  // Other Hub kernels this build loads (kernel-builder's `kernel-depends`), locked with it.
  std::vector<KernelDependency> kernel_depends;
  // Python packages a Python-only build imports (`python-depends`: names from kernels'
  // allow-list, e.g. "einops", "nvidia-cutlass-dsl"), checked before it is imported.
  std::vector<std::string> python_depends;
  bool has_digest() const { return digest_algorithm.has_value(); }
};

// too_large above 1 MiB (or too many values), malformed_response for bad or too deep JSON, a
// non-string id, an out-of-range integer version or a malformed digest, unsafe_path for a
// hostile path in digest.files.
Result<KernelMetadata> parse_kernel_metadata(std::string_view json);

// The digest as variant-relative path -> lowercase hex sha256, for callers that compare
// files themselves (the loader). hash_mismatch for an algorithm other than sha256,
// malformed_response for a value that is not a base64 sha256. Empty without a digest.
Result<std::map<std::string, std::string>> digest_sha256_hex(const KernelMetadata& metadata);

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
