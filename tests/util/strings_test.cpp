// The string helpers every module shares (one of each).
#include "kernelhub/util/strings.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <vector>

using namespace kernelhub::util;

TEST_CASE("to_hex writes two lowercase digits a byte") {
  const std::array<unsigned char, 4> bytes{0x00, 0x0f, 0xa0, 0xff};
  CHECK(to_hex(bytes) == "000fa0ff");
  CHECK(to_hex({}).empty());
}

TEST_CASE("ascii_lower changes A-Z only") {
  CHECK(ascii_lower("Flash_ATTN-3.X") == "flash_attn-3.x");
  const std::string high = "\xC3\x84Z";  // UTF-8 'Ä' stays as it is
  CHECK(ascii_lower(high) == "\xC3\x84z");
  CHECK(ascii_lower("").empty());
}

TEST_CASE("join puts the separator between items only") {
  CHECK(join({}, ", ").empty());
  CHECK(join({"a"}, ", ") == "a");
  CHECK(join({"a", "", "c"}, ",") == "a,,c");
}

TEST_CASE("url_encode keeps slashes only when asked") {
  CHECK(url_encode("refs/pr/1", false) == "refs%2Fpr%2F1");
  CHECK(url_encode("build/a b/c.py", true) == "build/a%20b/c.py");
  // RFC 3986's unreserved characters stay; everything else is %XX, upper-case hex.
  CHECK(url_encode("AZaz09-._~", false) == "AZaz09-._~");
  CHECK(url_encode("a+b?c=d&e#f%", false) == "a%2Bb%3Fc%3Dd%26e%23f%25");
  CHECK(url_encode("\xFF\x01", true) == "%FF%01");
}
