// Result's propagation macros: KH_TRY passes an error up, KH_TRY_ASSIGN also names the value.
#include "kernelhub/util/result.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

using namespace kernelhub;

namespace {

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9')
    return fail(ErrorCode::invalid_argument, std::string("not a digit: ") + c);
  return c - '0';
}

Result<int> sum_of_digits(const std::string& text) {
  int sum = 0;
  for (const char c : text) {
    KH_TRY_ASSIGN(const int digit, parse_digit(c));
    sum += digit;
  }
  return sum;
}

Result<std::unique_ptr<int>> boxed(int value) {
  if (value < 0) return fail(ErrorCode::invalid_argument, "negative");
  return std::make_unique<int>(value);
}

Result<int> unbox(int value) {
  KH_TRY_ASSIGN(auto box, boxed(value));  // move-only values are moved out
  return *box + 1;
}

Result<void> check_digit(char c) {
  KH_TRY(parse_digit(c));
  return ok();
}

}  // namespace

TEST_CASE("KH_TRY_ASSIGN names the value or returns the error", "[trust][result]") {
  CHECK(sum_of_digits("123").value() == 6);
  const auto bad = sum_of_digits("1x3");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::invalid_argument);
  CHECK(bad.error().message == "not a digit: x");
  CHECK(unbox(41).value() == 42);
  CHECK(unbox(-1).error().message == "negative");
}

TEST_CASE("KH_TRY returns the error of a Result and goes on after a value", "[trust][result]") {
  CHECK(check_digit('7'));
  CHECK(check_digit('z').error().code == ErrorCode::invalid_argument);
}
