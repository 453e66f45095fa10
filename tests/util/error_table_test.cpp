// The error table is the one place that says what a code means; these are its rules.
#include "kernelhub/util/error_table.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

using namespace kernelhub;

namespace {

std::vector<ErrorCode> every_code() {
  std::vector<ErrorCode> codes;
  for (int i = 0; i <= static_cast<int>(ErrorCode::internal); ++i) {
    codes.push_back(static_cast<ErrorCode>(i));
  }
  return codes;
}

// The exit code of each kind; the two codes with their own exit code are the exceptions.
int exit_code_of_kind(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage:
      return 2;
    case ErrorKind::refusal:
      return 3;
    case ErrorKind::not_found:
      return 4;
    case ErrorKind::upstream:
      return 6;
    case ErrorKind::integrity:
      return 7;
    case ErrorKind::local:
    case ErrorKind::bug:
      return 1;
  }
  return -1;
}

}  // namespace

TEST_CASE("every error code has one row: a unique wire name that reads back", "[trust][errors]") {
  std::set<std::string> names;
  for (const ErrorCode code : every_code()) {
    const ErrorInfo& info = error_info(code);
    INFO(info.name);
    CHECK(info.code == code);
    CHECK(to_string(code) == info.name);
    CHECK(error_code_from_string(info.name) == code);
    CHECK(names.insert(std::string(info.name)).second);
    CHECK_FALSE(info.hub_code.empty());
  }
  CHECK_FALSE(error_code_from_string("no_such_code").has_value());
}

TEST_CASE("the exit code follows the kind, but for no_matching_variant and disk_full",
          "[trust][errors]") {
  for (const ErrorCode code : every_code()) {
    const ErrorInfo& info = error_info(code);
    INFO(info.name << " (" << to_string(info.kind) << ")");
    if (code == ErrorCode::no_matching_variant) {
      CHECK(info.exit_code == 5);
    } else if (code == ErrorCode::disk_full) {
      CHECK(info.exit_code == 8);
    } else {
      CHECK(info.exit_code == exit_code_of_kind(info.kind));
    }
  }
}

TEST_CASE("HTTP statuses: refusals 403, integrity 502, misses 404 or 401", "[trust][errors]") {
  for (const ErrorCode code : every_code()) {
    const ErrorInfo& info = error_info(code);
    INFO(info.name);
    switch (info.kind) {
      case ErrorKind::refusal:
        CHECK(info.http_status == 403);
        break;
      case ErrorKind::integrity:
        CHECK(info.http_status == 502);
        break;
      case ErrorKind::not_found:
        CHECK((info.http_status == 404 || info.http_status == 401));
        break;
      default:
        CHECK(info.http_status >= 400);
        CHECK(info.http_status < 600);
    }
  }
}

TEST_CASE("the three codes the switches disagreed on mean one thing", "[trust][errors]") {
  // not_locked: the lockfile refuses what it does not pin (was a usage error in the CLI).
  CHECK(kind_of(ErrorCode::not_locked) == ErrorKind::refusal);
  CHECK(error_info(ErrorCode::not_locked).exit_code == 3);
  CHECK(is_refused(ErrorCode::not_locked));
  // hash_mismatch and unsafe_path: bytes from outside that do not verify. A client's bad path
  // on a Hub-API server is invalid_request instead.
  for (const ErrorCode code : {ErrorCode::hash_mismatch, ErrorCode::unsafe_path}) {
    INFO(to_string(code));
    CHECK(kind_of(code) == ErrorKind::integrity);
    CHECK(error_info(code).exit_code == 7);
    CHECK(error_info(code).http_status == 502);
    CHECK(is_refused(code));
  }
  CHECK(error_info(ErrorCode::invalid_request).http_status == 400);
}

TEST_CASE("huggingface_hub's cache fallback: the Hub unreachable or any HTTP error from it",
          "[trust][errors]") {
  std::set<ErrorCode> fallback;
  for (const ErrorCode code : every_code()) {
    if (error_info(code).cache_fallback) fallback.insert(code);
  }
  CHECK(fallback == std::set<ErrorCode>{ErrorCode::network, ErrorCode::timeout,
                                        ErrorCode::http_status, ErrorCode::rate_limited,
                                        ErrorCode::unauthorized, ErrorCode::gated,
                                        ErrorCode::repo_not_found});
}

TEST_CASE("docs/errors.md prints the table as it is", "[trust][errors]") {
  std::ifstream doc(std::string(KH_SOURCE_DIR) + "/docs/errors.md");
  REQUIRE(doc);
  // | `name` | kind | exit | HTTP | X-Error-Code | cache fallback |
  const std::regex row(R"(^\| `(\w+)` \| (\w+) \| (\d+) \| (\d+) \| (\w+) \| (yes|no) \|$)");
  std::set<std::string> documented;
  std::string line;
  while (std::getline(doc, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    INFO(line);
    const auto code = error_code_from_string(m[1].str());
    REQUIRE(code.has_value());
    const ErrorInfo& info = error_info(*code);
    CHECK(m[2].str() == to_string(info.kind));
    CHECK(std::stoi(m[3].str()) == info.exit_code);
    CHECK(std::stoi(m[4].str()) == info.http_status);
    CHECK(m[5].str() == info.hub_code);
    CHECK((m[6].str() == "yes") == info.cache_fallback);
    documented.insert(m[1].str());
  }
  CHECK(documented.size() == every_code().size());
}
