// [cache] of the admin policy:
//   [cache]
//   max_size = "50GiB"           # bytes, or a size with a unit (k M G T, Ki Mi Gi Ti)
//   min_free = "10%"             # of the file system, or a size
//   max_unused_age = "30d"       # s m h d w; a bare integer is seconds
//   check_interval = "10m"       # how often kernelhubd checks, besides after each download
//   in_use_grace = "60s"         # kernelhubd's passes leave variants used this recently
#include <string>

#include "kernelhub/util/quantity.hpp"
#include "policy_toml.hpp"

namespace kernelhub::trust {
namespace {

Unexpected bad(const std::string& where, const std::string& what) {
  return fail(ErrorCode::policy, where + " " + what);
}

// A TOML integer, or a string for `parse`: both spellings an admin would write.
template <typename Parse>
auto quantity(const toml::node& node, const std::string& where, Parse parse)
    -> decltype(parse(std::string_view())) {
  if (const auto number = node.value<std::int64_t>(); node.is_integer() && number) {
    if (*number < 0) return bad(where, "must not be negative");
    return parse(std::to_string(*number));
  }
  const auto text = node.value<std::string>();
  if (!node.is_string() || !text) return bad(where, "must be an integer or a string");
  auto parsed = parse(*text);
  if (!parsed) return bad(where, parsed.error().message);
  return *parsed;
}

Result<void> parse_min_free(const toml::node& node, const std::string& where,
                            CacheSettings& settings) {
  if (const auto text = node.value<std::string>();
      node.is_string() && text && text->ends_with('%')) {
    auto percent = util::parse_percentage(*text);
    if (!percent) return bad(where, percent.error().message);
    settings.min_free_percent = *percent;
    return ok();
  }
  KH_TRY_ASSIGN(settings.min_free_bytes, quantity(node, where, util::parse_byte_size));
  return ok();
}

}  // namespace

Result<void> parse_cache_table(const toml::table& table, const std::string& source,
                               CacheSettings& settings) {
  for (const auto& [name, value] : table) {
    const std::string key(name.str());
    std::string where = source;
    where.append(": [cache] ").append(key);
    if (key == "max_size") {
      KH_TRY_ASSIGN(settings.max_size, quantity(value, where, util::parse_byte_size));
    } else if (key == "min_free") {
      KH_TRY(parse_min_free(value, where, settings));
    } else if (key == "max_unused_age") {
      KH_TRY_ASSIGN(settings.max_unused_age, quantity(value, where, util::parse_duration));
    } else if (key == "check_interval") {
      KH_TRY_ASSIGN(auto interval, quantity(value, where, util::parse_duration));
      if (interval.count() < 1) return bad(where, "must be at least 1s");
      settings.check_interval = interval;
    } else if (key == "in_use_grace") {
      KH_TRY_ASSIGN(settings.in_use_grace, quantity(value, where, util::parse_duration));
    } else {
      std::string message = source;
      message.append(": unknown key '")
          .append(key)
          .append(
              "' in [cache] (allowed: max_size, min_free, max_unused_age, check_interval, "
              "in_use_grace)");
      return fail(ErrorCode::policy, message);
    }
  }
  return ok();
}

}  // namespace kernelhub::trust
