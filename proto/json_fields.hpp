// Strict member access for parse_message: each getter names the member and the frame type
// in its invalid_request error, so a peer learns exactly what it got wrong.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelhub/util/result.hpp"

namespace kernelhub::proto::detail {

class Fields {
 public:
  Fields(const nlohmann::json& frame, std::string type) : frame_(frame), type_(std::move(type)) {}

  Result<std::string> string(const char* key) const;
  Result<std::optional<std::string>> optional_string(const char* key) const;  // absent or null
  Result<std::uint64_t> uint(const char* key) const;
  Result<std::optional<std::uint64_t>> optional_uint(const char* key) const;
  Result<std::int64_t> int64(const char* key) const;
  Result<double> number(const char* key) const;
  Result<bool> boolean(const char* key, std::optional<bool> fallback = std::nullopt) const;
  Result<std::optional<bool>> optional_boolean(const char* key) const;  // absent or null
  Result<std::vector<std::string>> strings(const char* key) const;
  Result<std::map<std::string, std::string>> string_map(const char* key) const;  // absent: {}
  // Absent or null: empty.
  Result<std::vector<std::string>> optional_strings(const char* key) const;
  Result<std::optional<std::map<std::string, std::string>>> optional_string_map(
      const char* key) const;  // absent or null: nullopt
  Result<const nlohmann::json*> array(const char* key) const;
  Result<const nlohmann::json*> object(const char* key) const;

  Unexpected invalid(const char* key, const char* expected) const;
  bool has(const char* key) const { return find(key) != nullptr; }  // present, null included

 private:
  const nlohmann::json* find(const char* key) const;

  const nlohmann::json& frame_;
  std::string type_;
};

// A non-negative integer that fits in uint64 (nlohmann stores small positives as either kind).
std::optional<std::uint64_t> as_uint(const nlohmann::json& value);

}  // namespace kernelhub::proto::detail
