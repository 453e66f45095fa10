#include "kernelhub/cli/format_units.hpp"

#include <array>
#include <cstdio>
#include <ctime>

namespace kernelhub::cli {

std::string format_bytes(std::uint64_t bytes) {
  static constexpr std::array<const char*, 5> kUnits{"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  // Two decimals from GiB up: a GiB-sized kernel differs in hundreds of MiB.
  std::snprintf(text, sizeof text, unit >= 2 ? "%.2f %s" : "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string format_rate(double bytes_per_second) {
  if (bytes_per_second < 0) bytes_per_second = 0;
  return format_bytes(static_cast<std::uint64_t>(bytes_per_second)) + "/s";
}

std::string format_utc(std::int64_t unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 32> text{};
  std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text.data();
}

}  // namespace kernelhub::cli
