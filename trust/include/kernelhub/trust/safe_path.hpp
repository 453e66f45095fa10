// Checks for paths that arrive from the network (tree listings, metadata.json): a pure
// string check that runs before any filesystem call.
#pragma once

#include <string>
#include <string_view>

#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

inline constexpr std::size_t kMaxPathSegment = 255;
inline constexpr std::size_t kMaxRepoPath = 1024;

// A relative '/'-separated path: not empty, not absolute, no '.', '..' or empty segments,
// no backslash, NUL or other control character, no percent-encoded '.', '/' or '\',
// segments <= 255 bytes, total <= 1024 bytes. Returns the path unchanged, or unsafe_path.
Result<std::string> validate_repo_path(std::string_view path);

// Untrusted text in an error message: util::printable (printable.hpp) with "\" escaped
// too, cut at `max_len` with "...".
std::string sanitize_for_message(std::string_view text, std::size_t max_len = 120);

}  // namespace kernelhub::trust
