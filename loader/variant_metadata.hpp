// Lenient reading of a variant's metadata.json for the loader: every field optional and a
// field of an unexpected type is ignored (Hub builds span several metadata generations, and
// local library builds may carry a package version such as "2.7.4"). Only the digest, when
// present, must be well formed: it is what the files are checked against.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "loader/kernel_loader.hpp"
#include "trust/result.hpp"

namespace kernelhub::loader::detail {

struct VariantMetadata {
  KernelMetadata fields;
  // Present when metadata.json has a `digest`: variant-relative path -> lowercase hex sha256.
  std::optional<std::map<std::string, std::string>> sha256_hex;
};

// malformed_response for text that is not a JSON object or a malformed digest,
// hash_mismatch for a digest algorithm other than sha256, too_large above 1 MiB.
Result<VariantMetadata> parse_variant_metadata(std::string_view json);

// Reads all of a small file from offset 0 with pread (too_large above `limit`).
Result<std::string> read_small_fd(int fd, std::size_t limit, std::string_view what);

}  // namespace kernelhub::loader::detail
