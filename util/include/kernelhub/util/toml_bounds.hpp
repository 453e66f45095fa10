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

// too_large above max_bytes; `code` for too many dots, or for a character in U+00A1..U+0499,
// U+2CEE..U+30E7 (but U+3000) or U+FB06..U+FEFE anywhere (toml++ 3.3 reaches undefined
// behaviour on them; TOML we read is ASCII in practice). The message is a short reason.
Result<void> check_toml_shape(std::string_view text, const TomlBounds& bounds, ErrorCode code);

}  // namespace kernelhub::util
