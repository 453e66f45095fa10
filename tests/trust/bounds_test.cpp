// The bounded JSON parse and the TOML pre-check that every parser of outside text uses.
#include <toml++/toml.h>
#include <catch2/catch.hpp>

#include <string>

#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/toml_bounds.hpp"

using namespace kernelhub;
using namespace kernelhub::trust;
using namespace kernelhub::util;

TEST_CASE("parse_bounded_json refuses size, depth and value count over the bounds") {
  const JsonBounds bounds{100, 3, 5};
  CHECK(parse_bounded_json(R"({"a":[[1]]})", bounds));
  auto deep = parse_bounded_json(R"({"a":[[[1]]]})", bounds);
  REQUIRE_FALSE(deep);
  CHECK(deep.error().code == ErrorCode::malformed_response);
  CHECK(deep.error().message == "nested deeper than 3 levels");
  auto many = parse_bounded_json("[1,2,3,4,5,6]", bounds);  // 1 array + 5 commas
  REQUIRE_FALSE(many);
  CHECK(many.error().message == "more than 5 values");
  auto big = parse_bounded_json(std::string(101, ' '), bounds);
  REQUIRE_FALSE(big);
  CHECK(big.error().code == ErrorCode::too_large);
  auto bad = parse_bounded_json("[1,", bounds, ErrorCode::malformed_frame);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::malformed_frame);
  CHECK(bad.error().message == "not valid JSON");
}

TEST_CASE("the JSON scan does not count brackets or commas inside strings") {
  const JsonBounds bounds{1000, 2, 4};
  auto text = parse_bounded_json(R"(["[[[[,,,,\"[[[", "\\"])", bounds);
  REQUIRE(text);
  CHECK((*text)[0] == R"([[[[,,,,"[[[)");
  CHECK((*text)[1] == "\\");
}

TEST_CASE("the policy TOML is bounded in size and dotted-key nesting before toml++ sees it") {
  // Each dot nests a table that toml++ frees recursively: 300,000 overflow the stack.
  std::string header = "[trust";
  for (int i = 0; i < 5000; ++i) header += ".a";
  header += "]\n";
  auto nested = parse_policy(header);
  REQUIRE_FALSE(nested);
  CHECK(nested.error().code == ErrorCode::policy);
  CHECK(nested.error().message.find("dots") != std::string::npos);
  auto big = parse_policy("# " + std::string(300u << 10, 'x') + "\n");
  REQUIRE_FALSE(big);
  CHECK(big.error().code == ErrorCode::policy);
  CHECK(big.error().message.find("byte limit") != std::string::npos);
  CHECK(check_toml_shape("a.b = 1.5\n", TomlBounds{100, 2}, ErrorCode::policy));
  CHECK_FALSE(check_toml_shape("a.b.c = 1.5\n", TomlBounds{100, 2}, ErrorCode::policy));
}

// The proof that toml_parser_trips_on is exact: in a constant expression, reaching
// TOML_UNREACHABLE (__builtin_unreachable) is a compile error. So toml++'s own function is
// evaluated at compile time on every code point the check lets through; the build fails if
// one of them reaches it. Each chunk stays under the compilers' constexpr step limits.
namespace {
// How many code points in [first, last] toml++ calls non-ASCII horizontal whitespace, asking
// it only about those the check lets through (the count uses every answer, so the compiler
// must evaluate every call).
constexpr int toml_whitespace_among_let_through(char32_t first, char32_t last) {
  int whitespace = 0;
  for (char32_t c = first; c <= last; ++c) {
    if (!kernelhub::util::toml_parser_trips_on(c) &&
        toml::impl::is_non_ascii_horizontal_whitespace(c)) {
      ++whitespace;
    }
  }
  return whitespace;
}
// toml++'s table holds 20 such code points (U+00A0, U+1680, U+180E, U+2000..U+200B, U+202F,
// U+205F, U+2060, U+3000, U+FEFF); none is refused, so all 20 are counted.
static_assert(toml_whitespace_among_let_through(0x0, 0x3FFF) +
                  toml_whitespace_among_let_through(0x4000, 0x7FFF) +
                  toml_whitespace_among_let_through(0x8000, 0xBFFF) +
                  toml_whitespace_among_let_through(0xC000, 0xFFFF) ==
              20);
// Past the BMP toml++ returns at its first range test; plane 1 shows it, and evaluating all
// 16 planes would pass gcc's constexpr operation limit.
static_assert(toml_whitespace_among_let_through(0x10000, 0x1FFFF) == 0);
}  // namespace

TEST_CASE("the TOML pre-check refuses exactly the blocks toml++ has no case for") {
  // Each block's edges: the first and last code point refused, and their neighbours.
  for (char32_t c : {U'\xA1', U'\u0499', U'\u2C5E', U'\u2CB2', U'\u3057', U'\uFB26', U'\uFEFE'}) {
    CHECK(toml_parser_trips_on(c));
  }
  for (char32_t c : {U'\xA0', U'\u049A', U'\u2C5D', U'\u3000', U'\u3058', U'\uFB25', U'\uFEFF'}) {
    CHECK_FALSE(toml_parser_trips_on(c));
  }
}

// Found by fuzz/policy_fuzz.cpp and fuzz/kernel_status_fuzz.cpp: toml++ 3.3 reaches
// __builtin_unreachable on these (U+FEBF in a key, U+FE7F, U+031E/U+045E in a dotted key,
// U+2CB2 as a key).
TEST_CASE("TOML with code points toml++ mishandles is refused before toml++ sees it") {
  for (const char* text : {"d\xef\xba\xbf\"v\"\n", "\xef\xb9\xbf", "kind.a\xcc\x9e\xd1\x9e = 1\n",
                           "# caf\xc3\xa9\n", "k = \"\xe3\x81\x82\"\n", "\xe2\xb2\xb2=\n"}) {
    auto policy = parse_policy(text);
    REQUIRE_FALSE(policy);
    CHECK(policy.error().code == ErrorCode::policy);
    CHECK(policy.error().message.find("the TOML parser cannot handle them") != std::string::npos);
  }
  // Outside those ranges: U+00A0, U+3000, U+FEFF (BOM), U+4E2D pass the check.
  CHECK(check_toml_shape("# \xc2\xa0 \xe3\x80\x80 \xef\xbb\xbf \xe4\xb8\xad\n", kPolicyToml,
                         ErrorCode::policy));
}
