// Sizes and durations as admins and users write them ("10GiB", "500M", "30d"): one parser of
// each, for the policy file and the command line alike.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "kernelhub/util/result.hpp"

namespace kernelhub::util {

// A byte count: digits with an optional fraction, then an optional unit with an optional
// trailing B, as ccache writes them: k/K, M, G, T are powers of 1000; Ki, Mi, Gi, Ti powers of
// 1024 ("10GiB", "1.5G", "800M", "4096"). invalid_argument names what is wrong, including an
// overflow past 2^64-1.
Result<std::uint64_t> parse_byte_size(std::string_view text);

// A duration: a non-negative integer with a unit s, m, h, d or w ("90s", "12h", "30d", "2w");
// a bare number is seconds.
Result<std::chrono::seconds> parse_duration(std::string_view text);

// A share of something: "10%" or "2.5%", from 0 to below 100.
Result<double> parse_percentage(std::string_view text);

}  // namespace kernelhub::util
