#include <catch2/catch.hpp>

#include "kernelhub/cli/format_units.hpp"

using kernelhub::cli::format_bytes;
using kernelhub::cli::format_rate;

TEST_CASE("byte counts use binary units with one or two decimals", "[units]") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(100ull * 1024 * 1024) == "100.0 MiB");
  CHECK(format_bytes(2481ull * 1024 * 1024) == "2.42 GiB");
}

TEST_CASE("rates are sizes per second and never negative", "[units]") {
  CHECK(format_rate(3.0 * 1024 * 1024) == "3.0 MiB/s");
  CHECK(format_rate(-5) == "0 B/s");
}
