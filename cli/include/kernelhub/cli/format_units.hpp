// Human-readable sizes and rates for CLI output (binary units, as `du -h` and huggingface-cli).
#pragma once

#include <cstdint>
#include <string>

namespace kernelhub::cli {

// "0 B", "512 B", "1.5 KiB", "100.0 MiB", "2.31 GiB".
std::string format_bytes(std::uint64_t bytes);

// "12.3 MiB/s"; bytes per second.
std::string format_rate(double bytes_per_second);

// "2026-12-01T06:19:13Z": Unix seconds as RFC 3339 UTC.
std::string format_utc(std::int64_t unix_seconds);

}  // namespace kernelhub::cli
