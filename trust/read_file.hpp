// The one bounded read of a small file (policies, lockfiles, manifests, refs, state): never
// more than one byte past the cap, so a caller tells "too large" from "at the cap" and a path
// such as /dev/zero cannot make it read forever.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace kernelhub::trust {

// At most max_bytes + 1 bytes from the start of `path`; nullopt when it cannot be opened or
// read.
std::optional<std::string> read_file_prefix(const std::filesystem::path& path,
                                            std::size_t max_bytes);

}  // namespace kernelhub::trust
