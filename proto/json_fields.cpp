#include "json_fields.hpp"

#include <limits>

namespace kernelhub::proto::detail {

std::optional<std::uint64_t> as_uint(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  return std::nullopt;
}

const nlohmann::json* Fields::find(const char* key) const {
  auto it = frame_.find(key);
  return it == frame_.end() ? nullptr : &*it;
}

Unexpected Fields::invalid(const char* key, const char* expected) const {
  const auto* value = find(key);
  std::string got = value ? std::string(value->type_name()) : "nothing";
  return fail(ErrorCode::invalid_request,
              "'" + type_ + "' frame: member '" + key + "' must be " + expected + ", got " + got);
}

Result<std::string> Fields::string(const char* key) const {
  const auto* v = find(key);
  if (!v || !v->is_string()) return invalid(key, "a string");
  return v->get<std::string>();
}

Result<std::optional<std::string>> Fields::optional_string(const char* key) const {
  const auto* v = find(key);
  if (!v || v->is_null()) return std::optional<std::string>{};
  if (!v->is_string()) return invalid(key, "a string or null");
  return std::optional<std::string>{v->get<std::string>()};
}

Result<std::uint64_t> Fields::uint(const char* key) const {
  const auto* v = find(key);
  auto n = v ? as_uint(*v) : std::nullopt;
  if (!n) return invalid(key, "a non-negative integer");
  return *n;
}

Result<std::optional<std::uint64_t>> Fields::optional_uint(const char* key) const {
  const auto* v = find(key);
  if (!v || v->is_null()) return std::optional<std::uint64_t>{};
  auto n = as_uint(*v);
  if (!n) return invalid(key, "a non-negative integer or null");
  return std::optional<std::uint64_t>{*n};
}

Result<std::int64_t> Fields::int64(const char* key) const {
  const auto* v = find(key);
  if (v && v->is_number_integer() &&
      (!v->is_number_unsigned() ||
       v->get<std::uint64_t>() <= std::numeric_limits<std::int64_t>::max()))
    return v->get<std::int64_t>();
  return invalid(key, "an integer");
}

Result<double> Fields::number(const char* key) const {
  const auto* v = find(key);
  if (!v || !v->is_number()) return invalid(key, "a number");
  return v->get<double>();
}

Result<bool> Fields::boolean(const char* key, std::optional<bool> fallback) const {
  const auto* v = find(key);
  if (!v && fallback) return *fallback;
  if (!v || !v->is_boolean()) return invalid(key, "a boolean");
  return v->get<bool>();
}

Result<std::optional<bool>> Fields::optional_boolean(const char* key) const {
  const auto* v = find(key);
  if (!v || v->is_null()) return std::optional<bool>{};
  if (!v->is_boolean()) return invalid(key, "a boolean or null");
  return std::optional<bool>{v->get<bool>()};
}

Result<std::vector<std::string>> Fields::strings(const char* key) const {
  const auto* v = find(key);
  if (!v || !v->is_array()) return invalid(key, "an array of strings");
  std::vector<std::string> out;
  out.reserve(v->size());
  for (const auto& item : *v) {
    if (!item.is_string()) return invalid(key, "an array of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<std::vector<std::string>> Fields::optional_strings(const char* key) const {
  const auto* v = find(key);
  if (!v || v->is_null()) return std::vector<std::string>{};
  return strings(key);
}

Result<std::map<std::string, std::string>> Fields::string_map(const char* key) const {
  const auto* v = find(key);
  std::map<std::string, std::string> out;
  if (!v || v->is_null()) return out;
  if (!v->is_object()) return invalid(key, "an object of strings");
  for (const auto& [name, value] : v->items()) {
    if (!value.is_string()) return invalid(key, "an object of strings");
    out.emplace(name, value.get<std::string>());
  }
  return out;
}

Result<std::optional<std::map<std::string, std::string>>> Fields::optional_string_map(
    const char* key) const {
  const auto* v = find(key);
  if (!v || v->is_null()) return std::optional<std::map<std::string, std::string>>{};
  auto map = string_map(key);
  KH_TRY(map);
  return std::optional{std::move(*map)};
}

Result<const nlohmann::json*> Fields::array(const char* key) const {
  const auto* v = find(key);
  if (!v || !v->is_array()) return invalid(key, "an array");
  return v;
}

Result<const nlohmann::json*> Fields::object(const char* key) const {
  const auto* v = find(key);
  if (!v || !v->is_object()) return invalid(key, "an object");
  return v;
}

}  // namespace kernelhub::proto::detail
