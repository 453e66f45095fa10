// String helpers used across modules, each written once.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kernelhub::util {

// Lowercase hex of `bytes` (digests, random temp suffixes).
std::string to_hex(std::span<const unsigned char> bytes);

// ASCII lowercase; other bytes unchanged (header names, backend names, hex ids).
std::string ascii_lower(std::string_view text);

// The items with `separator` between them.
std::string join(const std::vector<std::string>& items, std::string_view separator);

// Percent-encoding of everything but RFC 3986's unreserved characters (and '/' when
// `keep_slash`), as curl_easy_escape does: for URL path segments and query values.
std::string url_encode(std::string_view text, bool keep_slash);

}  // namespace kernelhub::util
