// Reading a variant's metadata.json from an open fd for the loader, through the one parser
// (trust::parse_kernel_metadata). Hub builds span several metadata generations and local
// library builds may carry a package version such as "2.7.4": see
// kernelhub/trust/metadata.hpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::loader::detail {

// Parsed metadata whose digest, when present, is usable (sha256, base64 values):
// hash_mismatch for another algorithm, malformed_response for a bad value.
Result<trust::KernelMetadata> read_metadata_fd(int fd, std::string_view what);

// Reads all of a small file from offset 0 with pread (too_large above `limit`).
Result<std::string> read_small_fd(int fd, std::size_t limit, std::string_view what);

}  // namespace kernelhub::loader::detail
