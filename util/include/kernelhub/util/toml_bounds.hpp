// Bounds for the TOML files we read (kernel-status.toml from the Hub, the admin policy,
// which in embedded mode a user names). toml++ caps nested arrays and inline tables at 256,
// but a dotted key (a.b.c... = 1) or a table header ([a.b.c...]) nests one table per dot
// and the tree is freed recursively: 300,000 dots overflow the stack. So every TOML text is
// checked for size and dots before it reaches the parser.
#pragma once

#include <cstddef>
#include <string_view>

#include "kernelhub/util/result.hpp"

namespace kernelhub::util {

struct TomlBounds {
  std::size_t max_bytes = 0;
  // '.' anywhere in the text (strings and numbers included: a plain, exact bound on how
  // deep dotted keys can nest, far above what a real file holds).
  std::size_t max_dots = 1024;
};

inline constexpr TomlBounds kKernelStatusToml{64u << 10, 1024};
inline constexpr TomlBounds kPolicyToml{256u << 10, 4096};

// True for the code points on which toml++ 3.3's is_non_ascii_horizontal_whitespace falls
// through its switch to TOML_UNREACHABLE (undefined behaviour in the release library): its
// table splits U+00A0..U+FEFF into 1018-wide blocks and has no case for blocks 0, 11 and 63,
// i.e. U+00A1..U+0499, U+2C5E..U+3057 (but U+3000) and U+FB26..U+FEFE. Kept exact by a
// compile-time test against toml++'s own function (tests/trust/bounds_test.cpp).
constexpr bool toml_parser_trips_on(char32_t c) {
  if (c <= U'\xA0' || c >= U'\uFEFF' || c == U'\u3000') {
    return false;
  }
  const auto block = (static_cast<unsigned>(c) - 0xA0u) / 0x3FAu;
  return block == 0 || block == 11 || block == 63;
}

// too_large above max_bytes; `code` for too many dots, or for a UTF-8 character anywhere on
// which toml_parser_trips_on holds (TOML we read is ASCII in practice). The message is a
// short reason.
Result<void> check_toml_shape(std::string_view text, const TomlBounds& bounds, ErrorCode code);

}  // namespace kernelhub::util
