#include <catch2/catch.hpp>

#include "kernelhub/util/quantity.hpp"

using namespace kernelhub;
using namespace kernelhub::util;

TEST_CASE("byte sizes: decimal and binary units, fractions, and refusals", "[util][quantity]") {
  CHECK(parse_byte_size("4096").value() == 4096);
  CHECK(parse_byte_size("0").value() == 0);
  CHECK(parse_byte_size("10k").value() == 10'000);
  CHECK(parse_byte_size("10KB").value() == 10'000);
  CHECK(parse_byte_size("1.5G").value() == 1'500'000'000);
  CHECK(parse_byte_size("10GiB").value() == 10ULL << 30);
  CHECK(parse_byte_size("10 GiB").value() == 10ULL << 30);
  CHECK(parse_byte_size("2Ti").value() == 2ULL << 40);
  CHECK(parse_byte_size("512B").value() == 512);
  for (const char* bad :
       {"", "G", "-1", "10XB", "1e3", "10 G B", "99999999999999999999T", "18446744073709551616"}) {
    INFO(bad);
    const auto parsed = parse_byte_size(bad);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().code == ErrorCode::invalid_argument);
  }
  CHECK(parse_byte_size("10XB").error().message.find("Ki, Mi, Gi, Ti") != std::string::npos);
}

TEST_CASE("durations: s m h d w, bare seconds, and refusals", "[util][quantity]") {
  CHECK(parse_duration("90").value() == std::chrono::seconds(90));
  CHECK(parse_duration("90s").value() == std::chrono::seconds(90));
  CHECK(parse_duration("30m").value() == std::chrono::minutes(30));
  CHECK(parse_duration("12h").value() == std::chrono::hours(12));
  CHECK(parse_duration("30d").value() == std::chrono::hours(24 * 30));
  CHECK(parse_duration("2w").value() == std::chrono::hours(24 * 14));
  for (const char* bad : {"", "d", "1.5d", "-3d", "3y", "9999999999999d"}) {
    INFO(bad);
    CHECK_FALSE(parse_duration(bad));
  }
}

TEST_CASE("percentages: 0 to below 100, with the sign", "[util][quantity]") {
  CHECK(parse_percentage("10%").value() == 10.0);
  CHECK(parse_percentage("2.5%").value() == 2.5);
  CHECK(parse_percentage("0%").value() == 0.0);
  for (const char* bad : {"", "%", "10", "100%", "x%", "-5%", "10 %"}) {
    INFO(bad);
    CHECK_FALSE(parse_percentage(bad));
  }
}
