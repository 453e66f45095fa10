// Pure helpers of the Hub client: etags, Link pagination, rate-limit waits, error mapping,
// configuration from the environment, JSON parsing of refs/tree bodies.
#include <catch2/catch.hpp>

#include <fstream>

#include "kernelhub/hub/downloader.hpp"
#include "kernelhub/hub/http.hpp"
#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/hub/kernel_status.hpp"
#include "kernelhub/util/strings.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::hub;

TEST_CASE("normalize_etag strips weak prefix and quotes") {
  CHECK(normalize_etag("\"abc\"") == "abc");
  CHECK(normalize_etag("W/\"abc\"") == "abc");
  CHECK(normalize_etag(" abc ") == "abc");
  CHECK(normalize_etag("") == "");
}

TEST_CASE("parse_link_next finds rel=next among several links") {
  CHECK(parse_link_next("<https://h/api/x?cursor=2>; rel=\"next\"") == "https://h/api/x?cursor=2");
  CHECK(parse_link_next("<https://h/a>; rel=\"xet-auth\", <https://h/b?c=1>; rel=\"next\"") ==
        "https://h/b?c=1");
  CHECK(parse_link_next("<https://h/b>; rel=next") == "https://h/b");
  CHECK_FALSE(parse_link_next("<https://h/a>; rel=\"prev\"").has_value());
  CHECK_FALSE(parse_link_next("garbage").has_value());
}

TEST_CASE("retry_after_seconds prefers RateLimit t+1 when the quota is exhausted") {
  CHECK(retry_after_seconds({{"ratelimit", "\"api\";r=0;t=55"}}) == 56);
  CHECK(retry_after_seconds({{"ratelimit", "\"api\";r=3;t=55"}, {"retry-after", "7"}}) == 7);
  CHECK(retry_after_seconds({{"retry-after", "4"}}) == 4);
  CHECK_FALSE(retry_after_seconds({{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}).has_value());
  CHECK_FALSE(retry_after_seconds({}).has_value());
}

TEST_CASE("backoff is 1-2-4-8-8 units and the unit comes from KERNELHUB_RETRY_BASE_MS") {
  HubConfig config;
  CHECK(config.backoff(0).count() == 1000);
  CHECK(config.backoff(1).count() == 2000);
  CHECK(config.backoff(2).count() == 4000);
  CHECK(config.backoff(3).count() == 8000);
  CHECK(config.backoff(4).count() == 8000);
  util::Environment env;
  env.set("KERNELHUB_RETRY_BASE_MS", "3");
  CHECK(HubConfig::from(env).backoff(2).count() == 12);
}

TEST_CASE("map_http_error types errors by X-Error-Code, then by status") {
  CHECK(map_http_error(404, {{"x-error-code", "RepoNotFound"}}, "", "u").code ==
        ErrorCode::repo_not_found);
  CHECK(map_http_error(404, {{"x-error-code", "RevisionNotFound"}}, "", "u").code ==
        ErrorCode::revision_not_found);
  CHECK(map_http_error(404, {{"x-error-code", "EntryNotFound"}}, "", "u").code ==
        ErrorCode::entry_not_found);
  CHECK(map_http_error(401, {{"x-error-code", "GatedRepo"}}, "", "u").code == ErrorCode::gated);
  CHECK(map_http_error(401, {}, "", "u").code == ErrorCode::unauthorized);
  CHECK(map_http_error(403, {}, "", "u").code == ErrorCode::unauthorized);
  CHECK(map_http_error(429, {}, "", "u").code == ErrorCode::rate_limited);
  const auto other =
      map_http_error(500, {{"x-error-message", "boom"}}, "{\"error\":\"disk\\nbroken\"}", "u");
  CHECK(other.code == ErrorCode::http_status);
  CHECK(other.message.find("boom") != std::string::npos);
  CHECK(other.message.find("disk broken") != std::string::npos);
  CHECK(other.message.find('\n') == std::string::npos);
}

// Regression: a 404 whose "error" nests '[' 200,000 deep killed the CLI and kernelhubd with
// SIGSEGV (the message was built with nlohmann's recursive dump()).
TEST_CASE("map_http_error survives hostile error bodies and keeps its message short") {
  const std::string deep =
      "{\"error\":" + std::string(200'000, '[') + std::string(200'000, ']') + "}";
  const auto nested = map_http_error(404, {}, deep, "u");
  CHECK(nested.code == ErrorCode::http_status);
  CHECK(nested.message.size() < 400);
  CHECK(nested.message.find("HTTP 404") != std::string::npos);

  // A non-string "error" within the bounds: compact JSON, one line, cut short.
  std::string wide = R"({"error":{"a":[)";
  for (int i = 0; i < 1000; ++i) wide += (i ? ",\"" : "\"") + std::to_string(i) + "\\n\"";
  wide += "]}}";
  const auto object = map_http_error(500, {}, wide, "u");
  CHECK(object.message.find("{\"a\":[\"0\\n\"") != std::string::npos);
  CHECK(object.message.find("...") != std::string::npos);
  CHECK(object.message.size() < 500);
  CHECK(object.message.find('\n') == std::string::npos);

  // Huge strings, in the body and in X-Error-Message, are cut as well; control bytes go.
  const auto huge = map_http_error(503, {{"x-error-message", std::string(100'000, 'm') + "\r\n"}},
                                   R"({"error":")" + std::string(1'000'000, 'e') + R"("})", "u");
  CHECK(huge.message.size() < 1000);
  CHECK(huge.message.find('\r') == std::string::npos);

  // A body over the error-body bound is not parsed at all; nothing is invented from it.
  const auto big =
      map_http_error(500, {}, R"({"error":"x",)" + std::string(70'000, ' ') + "}", "u");
  CHECK(big.message.find(": x") == std::string::npos);
}

TEST_CASE("HubConfig reads endpoint, token, timeouts and offline mode from the environment") {
  util::Environment env;
  CHECK(HubConfig::from(env).endpoint == "https://huggingface.co");
  env.set("HF_ENDPOINT", "http://127.0.0.1:9/");
  env.set("HF_TOKEN", "hf_abc");
  env.set("HF_HUB_ETAG_TIMEOUT", "2.5");
  env.set("HF_HUB_DOWNLOAD_TIMEOUT", "7");
  env.set("HF_HUB_OFFLINE", "yes");
  auto config = HubConfig::from(env);
  CHECK(config.endpoint == "http://127.0.0.1:9");
  CHECK(config.token == "hf_abc");
  CHECK(config.etag_timeout.count() == 2500);
  CHECK(config.download_timeout.count() == 7000);
  CHECK(config.offline);
  env.set("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1");
  CHECK_FALSE(HubConfig::from(env).token.has_value());
}

TEST_CASE("HubConfig falls back to the token file under HF_HOME") {
  testing::TempDir dir;
  std::ofstream(dir.path() / "token") << "hf_from_file\n";
  util::Environment env;
  env.set("HF_HOME", dir.path().string());
  CHECK(HubConfig::from(env).token == "hf_from_file");
  env.set("HUGGING_FACE_HUB_TOKEN", "hf_legacy");
  CHECK(HubConfig::from(env).token == "hf_legacy");
}

TEST_CASE("content_range_start parses the first byte position") {
  CHECK(content_range_start("bytes 100-199/200") == 100u);
  CHECK(content_range_start("bytes 0-0/1") == 0u);
  CHECK_FALSE(content_range_start("bytes */200").has_value());
  CHECK_FALSE(content_range_start("").has_value());
}

TEST_CASE("parse_refs_json reads branches and tags with 40-hex commits") {
  const std::string sha(40, 'a');
  auto refs =
      parse_refs_json(R"({"branches":[{"name":"v1","ref":"refs/heads/v1","targetCommit":")" + sha +
                      R"("}],"converts":[],"tags":[]})");
  REQUIRE(refs);
  REQUIRE(refs->branches.size() == 1);
  CHECK(refs->branches[0].target_commit == sha);
  CHECK(parse_refs_json(R"({"branches":[{"name":"v1","targetCommit":"zz"}]})").error().code ==
        ErrorCode::malformed_response);
  CHECK(parse_refs_json("not json").error().code == ErrorCode::malformed_response);
}

TEST_CASE("parse_tree_json validates paths, ids and folder containment") {
  const std::string oid(40, 'b');
  const std::string sha(64, 'c');
  auto ok = parse_tree_json(
      R"([{"type":"file","path":"build/v/a.so","oid":")" + oid + R"(","size":5,"lfs":{"oid":")" +
          sha + R"(","size":5,"pointerSize":130}},{"type":"directory","path":"build/v/d","oid":")" +
          oid + R"("}])",
      "build/v");
  REQUIRE(ok);
  REQUIRE(ok->size() == 2);
  CHECK((*ok)[0].etag() == sha);
  CHECK((*ok)[0].is_lfs());
  CHECK_FALSE((*ok)[1].is_file);
  const auto code = [&](const std::string& body) {
    return parse_tree_json(body, "build/v").error().code;
  };
  CHECK(code(R"([{"type":"file","path":"build/v/../../x","oid":")" + oid + R"(","size":1}])") ==
        ErrorCode::unsafe_path);
  CHECK(code(R"([{"type":"file","path":"/etc/passwd","oid":")" + oid + R"(","size":1}])") ==
        ErrorCode::unsafe_path);
  CHECK(code(R"([{"type":"file","path":"other/x","oid":")" + oid + R"(","size":1}])") ==
        ErrorCode::unsafe_path);
  CHECK(code(R"([{"type":"file","path":"build/v/x","oid":"../../etc","size":1}])") ==
        ErrorCode::malformed_response);
  CHECK(code(R"([{"type":"file","path":"build/v/x","oid":")" + oid + R"("}])") ==
        ErrorCode::malformed_response);
  CHECK(code(R"({"not":"an array"})") == ErrorCode::malformed_response);
}

TEST_CASE("tree, refs and revision bodies are bounded in depth and value count") {
  const std::string deep = std::string(65, '[') + std::string(65, ']');
  auto tree = parse_tree_json(deep, "");
  REQUIRE_FALSE(tree);
  CHECK(tree.error().code == ErrorCode::malformed_response);
  CHECK(tree.error().message.find("nested deeper than 64") != std::string::npos);
  // 64 levels are JSON we accept (and then refuse for its shape, not its depth).
  CHECK(parse_tree_json(std::string(64, '[') + std::string(64, ']'), "")
            .error()
            .message.find("nested") == std::string::npos);
  std::string many = "[";
  for (int i = 0; i < 250'001; ++i) many += i ? ",0" : "0";
  many += "]";
  auto wide = parse_refs_json("{\"tags\":" + many + "}");
  REQUIRE_FALSE(wide);
  CHECK(wide.error().message.find("more than 250000 values") != std::string::npos);
  auto revision = parse_revision_json(std::string(17u << 20, ' '));
  REQUIRE_FALSE(revision);
  CHECK(revision.error().code == ErrorCode::too_large);
}

TEST_CASE("kernel-status.toml with a deeply dotted key is refused before toml++ parses it") {
  std::string dotted = "kind";
  for (int i = 0; i < 30'000; ++i) dotted += ".a";  // 60 KiB: under the size cap
  dotted += " = 1\n";
  auto status = parse_kernel_status(dotted);
  REQUIRE_FALSE(status);
  CHECK(status.error().code == ErrorCode::malformed_response);
  CHECK(status.error().message.find("dots") != std::string::npos);
  auto big = parse_kernel_status(std::string(65u << 10, '\n'));
  REQUIRE_FALSE(big);
  CHECK(big.error().code == ErrorCode::too_large);
}
