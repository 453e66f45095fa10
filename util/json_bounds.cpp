#include "kernelhub/util/json_bounds.hpp"

#include <string>

namespace kernelhub::util {

Result<void> check_json_shape(std::string_view text, const JsonBounds& bounds, ErrorCode code) {
  std::size_t depth = 0;
  std::size_t items = 0;
  bool in_string = false;
  // Strings are skipped (a bracket inside one is text); everything else is counted even if
  // the document turns out not to be JSON: the scan bounds the work, the parser judges.
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > bounds.max_depth) {
          return fail(code, "nested deeper than " + std::to_string(bounds.max_depth) + " levels");
        }
        [[fallthrough]];
      case ',':
        if (++items > bounds.max_items) {
          return fail(code, "more than " + std::to_string(bounds.max_items) + " values");
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return ok();
}

Result<nlohmann::json> parse_bounded_json(std::string_view text, const JsonBounds& bounds,
                                          ErrorCode code) {
  if (text.size() > bounds.max_bytes) {
    return fail(ErrorCode::too_large, std::to_string(text.size()) + " bytes, more than the " +
                                          std::to_string(bounds.max_bytes) + "-byte limit");
  }
  KH_TRY(check_json_shape(text, bounds, code));
  auto value = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return fail(code, "not valid JSON");
  return value;
}

}  // namespace kernelhub::util
