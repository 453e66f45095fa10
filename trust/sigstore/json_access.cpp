#include "json_access.hpp"

#include <charconv>
#include <limits>

#include "kernelhub/trust/digest.hpp"

namespace kernelhub::trust::sigstore {
namespace {

std::string member_path(std::string_view path, std::string_view key) {
  std::string out(path);
  if (!out.empty()) out += '.';
  out += key;
  return out;
}

Unexpected bad(std::string_view path, std::string_view key, std::string_view what) {
  return fail(ErrorCode::signature_invalid, member_path(path, key) + " " + std::string(what));
}

}  // namespace

const nlohmann::json* find_member(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Result<const nlohmann::json*> object_member(const nlohmann::json& object, std::string_view key,
                                            std::string_view path) {
  const nlohmann::json* value = find_member(object, key);
  if (value == nullptr) return bad(path, key, "is missing");
  if (!value->is_object()) return bad(path, key, "is not an object");
  return value;
}

Result<const nlohmann::json*> array_member(const nlohmann::json& object, std::string_view key,
                                           std::string_view path) {
  const nlohmann::json* value = find_member(object, key);
  if (value == nullptr) return bad(path, key, "is missing");
  if (!value->is_array()) return bad(path, key, "is not an array");
  return value;
}

Result<std::string> string_member(const nlohmann::json& object, std::string_view key,
                                  std::string_view path) {
  const nlohmann::json* value = find_member(object, key);
  if (value == nullptr) return bad(path, key, "is missing");
  if (!value->is_string()) return bad(path, key, "is not a string");
  return value->get<std::string>();
}

Result<std::string> decode_base64(std::string_view text, std::string_view path) {
  auto bytes = from_base64(text);
  if (!bytes) {
    return fail(ErrorCode::signature_invalid, std::string(path) + " is not base64");
  }
  return std::string(bytes->begin(), bytes->end());
}

Result<std::string> bytes_member(const nlohmann::json& object, std::string_view key,
                                 std::string_view path) {
  KH_TRY_ASSIGN(auto text, string_member(object, key, path));
  return decode_base64(text, member_path(path, key));
}

Result<std::int64_t> int64_member(const nlohmann::json& object, std::string_view key,
                                  std::string_view path) {
  const nlohmann::json* value = find_member(object, key);
  if (value == nullptr) return bad(path, key, "is missing");
  if (value->is_number_unsigned()) {
    const auto n = value->get<std::uint64_t>();
    if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return bad(path, key, "is out of range");
    }
    return static_cast<std::int64_t>(n);
  }
  if (value->is_string()) {
    const auto& text = value->get_ref<const std::string&>();
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc{} || end != text.data() + text.size() || n < 0 || text.empty()) {
      return bad(path, key, "is not a non-negative integer");
    }
    return n;
  }
  return bad(path, key, "is not an integer");
}

}  // namespace kernelhub::trust::sigstore
