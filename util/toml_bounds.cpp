#include "kernelhub/util/toml_bounds.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

namespace kernelhub::util {

Result<void> check_toml_shape(std::string_view text, const TomlBounds& bounds, ErrorCode code) {
  if (text.size() > bounds.max_bytes) {
    return fail(ErrorCode::too_large, std::to_string(text.size()) + " bytes, more than the " +
                                          std::to_string(bounds.max_bytes) + "-byte limit");
  }
  const auto dots = static_cast<std::size_t>(std::count(text.begin(), text.end(), '.'));
  if (dots > bounds.max_dots) {
    return fail(code, std::to_string(dots) + " dots, more than the limit of " +
                          std::to_string(bounds.max_dots) + " (dotted keys nest one table each)");
  }
  // Found by fuzz/{kernel_status,policy}_fuzz.cpp; see toml_parser_trips_on. Every byte
  // position is decoded, continuation bytes too: refusing a little more never lets one by.
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    char32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF && i + 1 < text.size()) {
      cp = static_cast<char32_t>(((b0 & 0x1F) << 6) |
                                 (static_cast<unsigned char>(text[i + 1]) & 0x3F));
    } else if (b0 >= 0xE0 && b0 <= 0xEF && i + 2 < text.size()) {
      cp = static_cast<char32_t>(((b0 & 0x0F) << 12) |
                                 ((static_cast<unsigned char>(text[i + 1]) & 0x3F) << 6) |
                                 (static_cast<unsigned char>(text[i + 2]) & 0x3F));
    } else {
      continue;
    }
    if (toml_parser_trips_on(cp)) {
      std::array<char, 16> hex{};
      std::snprintf(hex.data(), hex.size(), "U+%04X", static_cast<unsigned>(cp));
      return fail(code, std::string("character ") + hex.data() + " at byte " + std::to_string(i) +
                            " (U+00A1..U+0499, U+2C5E..U+3057 and U+FB26..U+FEFE are refused: "
                            "the TOML parser cannot handle them safely)");
    }
  }
  return ok();
}

}  // namespace kernelhub::util
