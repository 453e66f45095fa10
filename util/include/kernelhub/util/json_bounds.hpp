// One bounded parse for every JSON document that comes from outside the process: Hub API
// replies, HTTP error bodies, metadata.json, protocol frames, `kernelhub serve` request
// bodies. Before nlohmann sees a byte, a flat scan refuses documents that are too big,
// nested too deep (deep documents make every later recursive walk, dump() included, a
// stack hazard) or hold too many values (each costs far more memory than its bytes).
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kernelhub/util/result.hpp"

namespace kernelhub::util {

struct JsonBounds {
  std::size_t max_bytes = 0;
  std::size_t max_depth = 64;  // nested arrays/objects
  // Values, counted as containers plus separators: about the number of array elements and
  // object members in the whole document.
  std::size_t max_items = 0;
};

// The bounds of each kind of document, in one place.
inline constexpr JsonBounds kHubApiJson{16u << 20, 64, 250'000};      // tree/refs/revision
inline constexpr JsonBounds kErrorBodyJson{64u << 10, 64, 4'096};     // 4xx/5xx bodies
inline constexpr JsonBounds kMetadataJson{1u << 20, 64, 100'000};     // metadata.json
inline constexpr JsonBounds kFrameJson{1u << 20, 64, 262'144};        // protocol frames
inline constexpr JsonBounds kRequestBodyJson{1u << 20, 64, 100'000};  // serve: POST bodies
inline constexpr JsonBounds kStoreJson{16u << 20, 64, 1'000'000};     // serve: commit files

// too_large above max_bytes; `code` (malformed_response unless given) for nesting deeper
// than max_depth, more than max_items values, or text that is not JSON. The message is a
// short reason ("not valid JSON", "nested deeper than 64 levels", ...) for the caller to
// prefix with what the document is.
Result<nlohmann::json> parse_bounded_json(std::string_view text, const JsonBounds& bounds,
                                          ErrorCode code = ErrorCode::malformed_response);

// The scan alone: ok when `text` stays within the depth and item bounds (size unchecked).
Result<void> check_json_shape(std::string_view text, const JsonBounds& bounds,
                              ErrorCode code = ErrorCode::malformed_response);

}  // namespace kernelhub::util
