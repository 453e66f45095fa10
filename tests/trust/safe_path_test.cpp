#include <catch2/catch.hpp>

#include "kernelhub/trust/safe_path.hpp"

using namespace kernelhub;
using namespace kernelhub::trust;

TEST_CASE("hostile repo paths are refused with unsafe_path", "[trust][safe_path]") {
  const std::string nul_name("build/a\0b.so", 12);
  const std::vector<std::pair<std::string, std::string>> hostile{
      {"", "empty path"},
      {"../x", "'.' or '..' segment"},
      {"build/ok/../../x", "'.' or '..' segment"},
      {"build/./x.so", "'.' or '..' segment"},
      {"..", "'.' or '..' segment"},
      {"/etc/x", "absolute path"},
      {"a\\b", "backslash"},
      {"a//b", "empty path segment"},
      {"build/", "empty path segment"},
      {"%2e%2e/x", "percent-encoded"},
      {"%2E%2E/x", "percent-encoded"},
      {"a%2fb", "percent-encoded"},
      {"a%2Fb", "percent-encoded"},
      {"a%5cb", "percent-encoded"},
      {nul_name, "control character"},
      {"a\nb", "control character"},
      {"a\x7f", "control character"},
      {std::string(10 * 1024, 'a'), "longer than 1024 bytes"},
      {std::string(256, 'a'), "longer than 255 bytes"},
      {"build/" + std::string(300, 'b') + "/x", "longer than 255 bytes"},
  };
  for (const auto& [path, why] : hostile) {
    INFO("path=" << sanitize_for_message(path) << " expected: " << why);
    auto r = validate_repo_path(path);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::unsafe_path);
    CHECK(r.error().message.find(why) != std::string::npos);
    // Quoted for the user, but never with raw control bytes and never 10 KB long.
    for (const char c : r.error().message) CHECK(static_cast<unsigned char>(c) >= 0x20);
    CHECK(r.error().message.size() < 400);
  }
}

TEST_CASE("ordinary kernel paths are accepted unchanged", "[trust][safe_path]") {
  for (const std::string& path :
       std::vector<std::string>{"build/torch211-cxx11-cu130-x86_64-linux/__init__.py",
                                "build/torch-universal/relu/_ops.py", "metadata.json", "README.md",
                                ".gitattributes", "build/v/_relu_cpu_30dc0ae.abi3.so", "a/..b/c..",
                                "100%/x", std::string(255, 'a'), "build/a%20b"}) {
    INFO(path);
    auto r = validate_repo_path(path);
    REQUIRE(r);
    CHECK(*r == path);
  }
}

TEST_CASE("sanitize_for_message escapes and truncates", "[trust][safe_path]") {
  CHECK(sanitize_for_message(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(sanitize_for_message("a\\b") == "a\\x5cb");
  CHECK(sanitize_for_message(std::string(500, 'z'), 10) == "zzzzzzzzzz...");
}
