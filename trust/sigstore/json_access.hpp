// Typed reads of the protobuf-JSON documents Sigstore uses (bundles, trusted roots). Each
// failure is signature_invalid and names the member's path ("tlogEntries[0].logIndex is
// missing"); the document's reader says which document. Unknown members are ignored, as
// protobuf JSON readers do.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kernelhub/util/result.hpp"

namespace kernelhub::trust::sigstore {

// The member, or null when `object` is not an object or lacks it.
const nlohmann::json* find_member(const nlohmann::json& object, std::string_view key);

Result<const nlohmann::json*> object_member(const nlohmann::json& object, std::string_view key,
                                            std::string_view path);
Result<const nlohmann::json*> array_member(const nlohmann::json& object, std::string_view key,
                                           std::string_view path);
Result<std::string> string_member(const nlohmann::json& object, std::string_view key,
                                  std::string_view path);
// A `bytes` field: standard base64, decoded.
Result<std::string> bytes_member(const nlohmann::json& object, std::string_view key,
                                 std::string_view path);
// An int64/uint64 field: protobuf JSON writes them as decimal strings, some writers as
// numbers; both are accepted, negatives are not.
Result<std::int64_t> int64_member(const nlohmann::json& object, std::string_view key,
                                  std::string_view path);

// Standard base64 -> bytes, for values not read through bytes_member.
Result<std::string> decode_base64(std::string_view text, std::string_view path);

}  // namespace kernelhub::trust::sigstore
