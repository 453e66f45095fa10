#include "trust/toml_bounds.hpp"

#include <algorithm>
#include <string>

namespace kernelhub::trust {

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
  return ok();
}

}  // namespace kernelhub::trust
