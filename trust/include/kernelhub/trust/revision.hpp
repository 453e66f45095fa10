// A Hub revision that arrives from outside (a request, a lockfile, metadata.json, a flag)
// checked before it goes into a URL: a branch or tag name, short or as refs/heads/...,
// refs/tags/... or refs/pr/N, or a commit sha, by git's own ref-name rules.
#pragma once

#include <string>
#include <string_view>

#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

inline constexpr std::size_t kMaxRevision = 255;

// git check-ref-format's rules for a ref name: '/'-separated components, none empty, none
// starting with '.' or ending in ".lock"; no "..", "@{", control character, space, ~ ^ : ? *
// [ or \, not "@" alone, not ending in '.'. Also refused here: '%' (a percent-encoded byte is
// no branch name; a proxy that decodes twice would read "%2F" as a '/'), and more than 255
// bytes. Returns the revision unchanged, or invalid_argument saying which rule it breaks.
Result<std::string> validate_revision(std::string_view revision);

}  // namespace kernelhub::trust
