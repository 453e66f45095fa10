// What may go into a Hub URL as a revision or a repo id: git's ref-name rules and
// huggingface_hub's repo-id rules, so that no '.'/'..' segment, control character or encoded
// separator reaches a URL through them.
#include <catch2/catch.hpp>

#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/trust/revision.hpp"
#include "kernelhub/trust/safe_path.hpp"

using namespace kernelhub;
using namespace kernelhub::trust;

TEST_CASE("revisions: branches, tags, PR refs and shas pass unchanged", "[trust][revision]") {
  for (const char* good :
       {"main", "v1", "v1.2.3", "refs/pr/1", "refs/heads/main", "refs/tags/v2", "feature/a-b_c",
        "0123456789abcdef0123456789abcdef01234567", "release@2024", "a#b"}) {
    INFO(good);
    auto r = validate_revision(good);
    REQUIRE(r);
    CHECK(*r == good);
  }
}

TEST_CASE("revisions that would change a URL's path are refused", "[trust][revision]") {
  const std::vector<std::pair<std::string, std::string>> hostile{
      {"", "empty"},
      {".", "ends with '.'"},
      {"..", "'..'"},
      {"../x", "'..'"},
      {"v1/..", "'..'"},
      {"v1/./x", "starts with '.'"},
      {"./v1", "starts with '.'"},
      {".hidden", "starts with '.'"},
      {"/main", "empty"},
      {"main/", "empty"},
      {"a//b", "empty"},
      {"%2e%2e", "'%'"},
      {"%2E%2e", "'%'"},
      {"v1%2F..%2Fx", "'%'"},
      {"a\\b", "'\\'"},
      {"a b", "space"},
      {"a?b", "'?'"},
      {"a:b", "':'"},
      {"a\nb", "control character"},
      {std::string("a\0b", 3), "control character"},
      {"a\x7f", "control character"},
      {"@", "'@' alone"},
      {"a@{1}", "'@{'"},
      {"main.lock", "'.lock'"},
      {std::string(256, 'a'), "longer than 255 bytes"},
  };
  for (const auto& [revision, why] : hostile) {
    INFO("revision=" << sanitize_for_message(revision) << " expected: " << why);
    auto r = validate_revision(revision);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::invalid_argument);
    CHECK(r.error().message.find(why) != std::string::npos);
    for (const char c : r.error().message) CHECK(static_cast<unsigned char>(c) >= 0x20);
  }
}

TEST_CASE("repo ids follow huggingface_hub: no part is a dot segment", "[trust][revision]") {
  for (const char* good : {"kernels-community/relu", "a/b", "org_1/name.v2", "_x/y_"}) {
    INFO(good);
    CHECK(RepoId::parse(good));
  }
  for (const char* bad :
       {"./relu", "kernels-community/.", "../x", "x/..", ".x/y", "x/y.", "-x/y", "x/y-", "a--b/c",
        "a..b/c", "x/y.git", "x", "a/b/c", "a/", "/b", "a b/c", "a%2e/b"}) {
    INFO(bad);
    auto r = RepoId::parse(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::invalid_argument);
  }
}
