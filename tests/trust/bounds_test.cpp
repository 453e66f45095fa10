// The bounded JSON parse and the TOML pre-check that every parser of outside text uses.
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

// Found by fuzz/policy_fuzz.cpp and fuzz/kernel_status_fuzz.cpp: toml++ 3.3 reaches
// __builtin_unreachable on these (U+FEBF in a key, U+FE7F, U+031E/U+045E in a dotted key).
TEST_CASE("TOML with code points toml++ mishandles is refused before toml++ sees it") {
  for (const char* text : {"d\xef\xba\xbf\"v\"\n", "\xef\xb9\xbf", "kind.a\xcc\x9e\xd1\x9e = 1\n",
                           "# caf\xc3\xa9\n", "k = \"\xe3\x81\x82\"\n"}) {
    auto policy = parse_policy(text);
    REQUIRE_FALSE(policy);
    CHECK(policy.error().code == ErrorCode::policy);
    CHECK(policy.error().message.find("the TOML parser cannot handle them") != std::string::npos);
  }
  // Outside those ranges: U+00A0, U+3000, U+FEFF (BOM), U+4E2D pass the check.
  CHECK(check_toml_shape("# \xc2\xa0 \xe3\x80\x80 \xef\xbb\xbf \xe4\xb8\xad\n", kPolicyToml,
                         ErrorCode::policy));
}
