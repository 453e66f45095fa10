#include "kernelhub/util/quantity.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <string>

namespace kernelhub::util {
namespace {

Error bad(std::string_view what, std::string_view text, std::string_view why) {
  return Error{ErrorCode::invalid_argument, "'" + std::string(text) + "' is not a " +
                                                std::string(what) + ": " + std::string(why)};
}

// Digits, optionally '.' and more digits; returns how many characters were used.
std::size_t scan_number(std::string_view text, bool allow_fraction) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (allow_fraction && i > 0 && i < text.size() && text[i] == '.') {
    std::size_t j = i + 1;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
    if (j > i + 1) i = j;
  }
  return i;
}

}  // namespace

Result<std::uint64_t> parse_byte_size(std::string_view text) {
  constexpr std::string_view kWhat = "size (e.g. 10GiB, 500M, 4096)";
  const std::size_t digits = scan_number(text, /*allow_fraction=*/true);
  if (digits == 0) return fail(bad(kWhat, text, "it must start with a number"));
  std::string_view unit = text.substr(digits);
  if (unit.starts_with(' ')) unit.remove_prefix(1);               // "10 GiB"
  if (unit.ends_with('B') && unit != "B") unit.remove_suffix(1);  // "GiB", "GB"
  if (unit == "B") unit = "";
  struct Unit {
    std::string_view name;
    long double factor;
  };
  static constexpr std::array<Unit, 10> kUnits{{{"", 1.0L},
                                                {"k", 1e3L},
                                                {"K", 1e3L},
                                                {"M", 1e6L},
                                                {"G", 1e9L},
                                                {"T", 1e12L},
                                                {"Ki", 1024.0L},
                                                {"Mi", 1024.0L * 1024},
                                                {"Gi", 1024.0L * 1024 * 1024},
                                                {"Ti", 1024.0L * 1024 * 1024 * 1024}}};
  const Unit* found = nullptr;
  for (const auto& u : kUnits) {
    if (u.name == unit) found = &u;
  }
  if (found == nullptr) {
    return fail(bad(kWhat, text,
                    "unknown unit '" + std::string(unit) +
                        "' (use k, M, G, T for powers of 1000 or Ki, Mi, Gi, Ti "
                        "for powers of 1024)"));
  }
  const long double value = std::stold(std::string(text.substr(0, digits))) * found->factor;
  if (!std::isfinite(value) ||
      value >= static_cast<long double>(std::numeric_limits<std::uint64_t>::max())) {
    return fail(bad(kWhat, text, "too large"));
  }
  return static_cast<std::uint64_t>(std::llround(value));
}

Result<std::chrono::seconds> parse_duration(std::string_view text) {
  constexpr std::string_view kWhat = "duration (e.g. 90s, 12h, 30d, 2w)";
  const std::size_t digits = scan_number(text, /*allow_fraction=*/false);
  if (digits == 0) return fail(bad(kWhat, text, "it must start with a whole number"));
  if (digits > 12) return fail(bad(kWhat, text, "too large"));
  std::string_view unit = text.substr(digits);
  if (unit.starts_with(' ')) unit.remove_prefix(1);  // "30 d"
  std::int64_t factor = 0;
  if (unit.empty() || unit == "s") factor = 1;
  if (unit == "m") factor = 60;
  if (unit == "h") factor = 3600;
  if (unit == "d") factor = 86400;
  if (unit == "w") factor = std::int64_t{7} * 86400;
  if (factor == 0)
    return fail(bad(kWhat, text, "unknown unit '" + std::string(unit) + "' (use s, m, h, d, w)"));
  return std::chrono::seconds(std::stoll(std::string(text.substr(0, digits))) * factor);
}

Result<double> parse_percentage(std::string_view text) {
  constexpr std::string_view kWhat = "percentage (e.g. 10%)";
  const std::size_t digits = scan_number(text, /*allow_fraction=*/true);
  if (digits == 0 || text.substr(digits) != "%")
    return fail(bad(kWhat, text, "a number followed by %"));
  const double value = std::stod(std::string(text.substr(0, digits)));
  if (value >= 100) return fail(bad(kWhat, text, "it must be below 100%"));
  return value;
}

}  // namespace kernelhub::util
