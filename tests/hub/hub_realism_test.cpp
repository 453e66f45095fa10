// What the real Hub does and our test server did not (research/hub-realism.md #2, #5, #6, #9):
// renamed or transferred repos answer API calls with a relative 307, anonymous requests for a
// missing or private repo get a bare 401, and a failing revision lookup must fall back to the
// cached snapshot quickly. Each case first proves, from the server's request log, that its
// fault happened.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "hub/fetch_fixture.hpp"
#include "hub/local_http_server.hpp"
#include "kernelhub/hub/api_url.hpp"
#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/hub/server/store_publisher.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;
namespace fs = std::filesystem;

namespace {

// A copy of the fixture kernel under another, untrusted publisher.
void publish_copy(const FetchFixture& fx, const trust::RepoId& repo) {
  const fs::path source = fx.tmp.path() / ("copy-" + repo.org);
  write_variant(source / "build" / kCpuVariant, cpu_variant_files());
  hub::server::PublishRequest request;
  request.root = fx.store;
  request.repo = repo;
  request.branch = "v1";
  request.source = source;
  REQUIRE(hub::server::publish_directory(request));
}

fetch::Request request_for(const std::string& org, const std::string& name) {
  auto request = FetchFixture::request();
  request.repo = trust::RepoId{org, name};
  return request;
}

fetch::Request main_revision() {
  auto request = FetchFixture::request();
  request.ref = *fetch::Ref::revision("main");
  return request;
}

}  // namespace

TEST_CASE("a renamed repo's 307 is followed and the kernel downloads under its new name",
          "[hub][realism][rename]") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.renames = {{"kernels-community/old-name", "kernels-community/demo-fetch"}};
  fx.server->set_faults(plan);
  auto result = fx.fetch(request_for("kernels-community", "old-name"), fx.config());
  INFO((result ? "" : result.error().message));
  REQUIRE(result);
  CHECK(fx.server->count_status(307, "/api/kernels/kernels-community/old-name/") == 1);
  CHECK(result->manifest.repo.str() == "kernels-community/demo-fetch");
  CHECK(result->manifest.commit == fx.commit);
  CHECK(slurp(result->manifest.snapshot_path / "build" / kCpuVariant / kSoName) ==
        cpu_variant_files().at(kSoName));
  // After the first redirect every request names the new repo directly.
  CHECK(fx.server->count("GET", "old-name") == 1);
}

TEST_CASE("a repo transferred to an untrusted org is refused before the new org is asked",
          "[hub][realism][rename][trust]") {
  FetchFixture fx;
  publish_copy(fx, trust::RepoId{"SageAttention", "demo-fetch"});
  testing::FaultPlan plan;
  plan.renames = {{"kernels-community/moved", "SageAttention/demo-fetch"}};
  fx.server->set_faults(plan);

  auto refused = fx.fetch(request_for("kernels-community", "moved"), fx.config());
  REQUIRE_FALSE(refused);
  CHECK(fx.server->count_status(307, "kernels-community/moved") == 1);  // the fault happened
  CHECK(refused.error().code == ErrorCode::untrusted_publisher);
  CHECK(refused.error().message.find("was moved on the Hub to SageAttention/demo-fetch") !=
        std::string::npos);
  CHECK(refused.error().message.find("DIFFUSERS_TRUST_REMOTE_KERNELS") != std::string::npos);
  CHECK(fx.server->count("", "SageAttention") == 0);  // nothing was asked of the new org
  CHECK(fx.file_gets() == 0);

  trust::TrustEnvironment opted_in;
  opted_in.trust_remote_kernels = true;
  auto allowed = fx.fetch(request_for("kernels-community", "moved"), fx.config(), opted_in);
  INFO((allowed ? "" : allowed.error().message));
  REQUIRE(allowed);
  CHECK(allowed->manifest.repo.str() == "SageAttention/demo-fetch");
  CHECK(fx.server->count("GET", "/api/kernels/SageAttention/demo-fetch/") >= 1);
}

TEST_CASE("a rename loop ends in a typed error after a bounded number of hops",
          "[hub][realism][rename]") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.renames = {{"kernels-community/ping", "kernels-community/pong"},
                  {"kernels-community/pong", "kernels-community/ping"}};
  fx.server->set_faults(plan);
  auto looped = fx.fetch(request_for("kernels-community", "ping"), fx.config());
  REQUIRE_FALSE(looped);
  CHECK(looped.error().code == ErrorCode::malformed_response);
  CHECK(looped.error().message.find("redirects") != std::string::npos);
  CHECK(fx.server->count_status(307) == 6);  // the first answer and 5 followed hops
  CHECK(fx.file_gets() == 0);
}

TEST_CASE("a legacy model-type repo behind a rename is found through the model paths",
          "[hub][realism][rename]") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.renames = {{"kernels-community/legacy", "kernels-community/demo-fetch"}};
  plan.model_only_repos = {"kernels-community/demo-fetch"};
  fx.server->set_faults(plan);
  auto result = fx.fetch(request_for("kernels-community", "legacy"), fx.config());
  INFO((result ? "" : result.error().message));
  REQUIRE(result);
  CHECK(fx.server->count_status(404, "/api/kernels/kernels-community/demo-fetch/refs") == 1);
  CHECK(fx.server->count_status(307, "/api/models/kernels-community/legacy/refs") == 1);
  CHECK(result->manifest.repo.str() == "kernels-community/demo-fetch");
  CHECK(fx.server->count("GET", "/kernels-community/demo-fetch/resolve/") >= 1);
  CHECK(fx.server->count("GET", "/kernels/kernels-community/demo-fetch/resolve/") == 0);
}

TEST_CASE("API redirects: absolute same-origin ones are followed, another origin is refused",
          "[hub][realism][rename]") {
  const std::string sha(40, 'a');
  LocalHttpServer other;
  int other_calls = 0;
  other.server.Get(".*", [&](const httplib::Request&, httplib::Response& res) {
    ++other_calls;
    res.set_content(R"({"sha":")" + sha + R"("})", "application/json");
  });
  other.start();
  LocalHttpServer hub;
  int hub_calls = 0;
  hub.server.Get("/api/kernels/kernels-community/absolute/revision/main",
                 [&](const httplib::Request&, httplib::Response& res) {
                   ++hub_calls;
                   res.status = 301;
                   res.set_header("Location", hub.endpoint() +
                                                  "/api/kernels/kernels-community/target/"
                                                  "revision/main");
                 });
  hub.server.Get("/api/kernels/kernels-community/target/revision/main",
                 [&](const httplib::Request&, httplib::Response& res) {
                   ++hub_calls;
                   res.set_content(R"({"sha":")" + sha + R"("})", "application/json");
                 });
  hub.server.Get("/api/kernels/kernels-community/elsewhere/revision/main",
                 [&](const httplib::Request&, httplib::Response& res) {
                   ++hub_calls;
                   res.status = 307;
                   res.set_header("Location", other.endpoint() +
                                                  "/api/kernels/kernels-community/elsewhere/"
                                                  "revision/main");
                 });
  hub.start();
  hub::HubConfig config;
  config.endpoint = hub.endpoint();
  hub::CurlHttpClient http(config);
  hub::HubApi api(config, http);

  auto followed = api.resolve_revision(trust::RepoId{"kernels-community", "absolute"}, "main");
  INFO((followed ? "" : followed.error().message));
  REQUIRE(followed);
  CHECK(hub_calls == 2);
  CHECK(*followed == sha);
  CHECK(api.moved_to(trust::RepoId{"kernels-community", "absolute"}) ==
        trust::RepoId{"kernels-community", "target"});

  auto refused = api.resolve_revision(trust::RepoId{"kernels-community", "elsewhere"}, "main");
  CHECK(hub_calls == 3);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::malformed_response);
  CHECK(refused.error().message.find("another origin") != std::string::npos);
  CHECK(other_calls == 0);
}

TEST_CASE("an anonymous 401 without X-Error-Code is repo_not_found after the legacy fallback",
          "[hub][realism][401]") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.anonymous_401 = true;
  fx.server->set_faults(plan);
  auto missing = fx.fetch(request_for("kernels-community", "no-such-kernel"), fx.config());
  REQUIRE_FALSE(missing);
  CHECK(fx.server->count_status(401, "/api/kernels/kernels-community/no-such-kernel/") == 1);
  CHECK(fx.server->count_status(401, "/api/models/kernels-community/no-such-kernel/") == 1);
  CHECK(missing.error().code == ErrorCode::repo_not_found);
  CHECK(missing.error().message.find("set HF_TOKEN") != std::string::npos);
  CHECK(missing.error().message.find("Invalid username or password.") != std::string::npos);

  SECTION("a legacy model-type repo answers the fallback") {
    plan.model_only_repos = {"kernels-community/demo-fetch"};
    fx.server->set_faults(plan);
    fx.server->reset_requests();
    auto result = fx.fetch();
    INFO((result ? "" : result.error().message));
    REQUIRE(result);
    CHECK(fx.server->count_status(401, "/api/kernels/kernels-community/demo-fetch/") == 1);
    CHECK(fx.server->count_status(200, "/api/models/kernels-community/demo-fetch/refs") == 1);
    CHECK(result->manifest.commit == fx.commit);
  }
  SECTION("a private repo answers a bare 401 without a token and serves with one") {
    plan.private_repos = {"kernels-community/demo-fetch"};
    fx.server->set_faults(plan);
    auto anonymous = fx.fetch();
    REQUIRE_FALSE(anonymous);
    CHECK(anonymous.error().code == ErrorCode::repo_not_found);
    auto config = fx.config();
    config.token = "hf_test";
    auto with_token = fx.fetch(FetchFixture::request(), config);
    INFO((with_token ? "" : with_token.error().message));
    REQUIRE(with_token);
    std::size_t authorized = 0;
    for (const auto& r : fx.server->requests())
      authorized += r.authorization && r.path.find("/api/kernels/") == 0 ? 1 : 0;
    CHECK(authorized >= 1);
  }
}

TEST_CASE("map_http_error reads a bare 401 or 404 on a repo URL as a missing repo",
          "[hub][realism][401]") {
  const std::string api = "https://huggingface.co/api/kernels/org/name/refs";
  const std::string file = "https://huggingface.co/kernels/org/name/resolve/main/x.py";
  const hub::HeaderMap anonymous{{"x-error-message", "Invalid username or password."}};
  const hub::HeaderMap bad_token{
      {"x-error-message", "Invalid credentials in Authorization header"}};
  const auto missing = hub::map_http_error(401, anonymous, "", api);
  CHECK(missing.code == ErrorCode::repo_not_found);
  CHECK(missing.message.find("set HF_TOKEN") != std::string::npos);
  CHECK(hub::map_http_error(401, anonymous, "", file).code == ErrorCode::repo_not_found);
  CHECK(hub::map_http_error(404, {}, "", api).code == ErrorCode::repo_not_found);
  CHECK(hub::map_http_error(401, bad_token, "", api).code == ErrorCode::unauthorized);
  CHECK(hub::map_http_error(403, {}, "", api).code == ErrorCode::unauthorized);
  CHECK(hub::map_http_error(404, {}, "", file).code == ErrorCode::http_status);
  CHECK(hub::map_http_error(401, {}, "", "https://huggingface.co/api/whoami-v2").code ==
        ErrorCode::unauthorized);
  CHECK(hub::map_http_error(401, {{"x-error-code", "GatedRepo"}}, "", api).code ==
        ErrorCode::gated);
}

TEST_CASE("a Hub error on revision resolution serves a complete cached snapshot at once",
          "[hub][realism][fallback]") {
  FetchFixture fx;
  const auto revision = main_revision();
  REQUIRE(fx.fetch(revision, fx.config()));
  auto version = FetchFixture::request();
  REQUIRE(fx.fetch(version, fx.config()));  // writes refs/v1 too

  struct Case {
    int status;
    int retry_after;
    const char* path;
    bool by_version;
    ErrorCode code;
  };
  const std::array<Case, 5> cases{{
      {503, 0, "/revision/", false, ErrorCode::http_status},
      {429, 600, "/revision/", false, ErrorCode::rate_limited},
      {401, 0, "/revision/", false, ErrorCode::unauthorized},
      {500, 0, "/refs", true, ErrorCode::http_status},
      {429, 600, "/refs", true, ErrorCode::rate_limited},
  }};
  for (const auto& c : cases) {
    INFO("HTTP " << c.status << " on " << c.path);
    fx.server->reset_requests();
    testing::FaultPlan plan;
    plan.fail_status = c.status;
    plan.fail_count = 1000;
    plan.retry_after_seconds = c.retry_after;
    plan.fail_path_filter = c.path;
    fx.server->set_faults(plan);
    auto config = fx.config();
    config.retry_base = std::chrono::milliseconds(1000);  // the default: 1-2-4-8-8 s
    const auto start = std::chrono::steady_clock::now();
    auto result = fx.fetch(c.by_version ? version : revision, config);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    CHECK(fx.server->count_status(c.status, c.path) == 1);  // asked once, not retried
    REQUIRE(result);
    CHECK(elapsed < std::chrono::seconds(2));
    CHECK(result->manifest.from_cache);
    CHECK(result->manifest.commit == fx.commit);
    CHECK(result->manifest.cache_fallback.find(std::string(to_string(c.code))) == 0);
    CHECK(result->manifest.cache_fallback.find("HTTP " + std::to_string(c.status)) !=
          std::string::npos);
    CHECK(fx.file_gets() == 0);
  }
}

TEST_CASE("a Hub error on revision resolution with nothing usable cached is a typed error",
          "[hub][realism][fallback]") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.fail_status = 503;
  plan.fail_count = 1000;
  plan.fail_path_filter = "/revision/";
  fx.server->set_faults(plan);
  auto uncached = fx.fetch(main_revision(), fx.config());
  REQUIRE_FALSE(uncached);
  CHECK(fx.server->count_status(503, "/revision/") == 6);  // no cache: the usual retries
  CHECK(uncached.error().code == ErrorCode::http_status);

  SECTION("a damaged cached snapshot is never served") {
    fx.server->set_faults({});
    auto warm = fx.fetch(main_revision(), fx.config());
    REQUIRE(warm);
    const auto so = warm->manifest.snapshot_path / "build" / kCpuVariant / kSoName;
    const auto blob = fs::canonical(so);
    fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
    std::ofstream(blob, std::ios::binary | std::ios::in | std::ios::out) << "tampered";
    fx.server->set_faults(plan);
    fx.server->reset_requests();
    auto refused = fx.fetch(main_revision(), fx.config());
    REQUIRE_FALSE(refused);
    CHECK(fx.server->count_status(503, "/revision/") == 7);  // one quick try, then 6
    CHECK(refused.error().code == ErrorCode::http_status);
  }
}

TEST_CASE("API redirect URLs: Location resolution, origins and the repo a URL names",
          "[hub][realism][rename]") {
  const std::string base = "http://127.0.0.1:8080/api/kernels/a/b/refs?x=1";
  CHECK(hub::resolve_location(base, "/api/kernels/c/d/refs") ==
        "http://127.0.0.1:8080/api/kernels/c/d/refs");
  CHECK(hub::resolve_location(base, "d2/refs") == "http://127.0.0.1:8080/api/kernels/a/b/d2/refs");
  CHECK(hub::resolve_location(base, "//other:1/x") == "http://other:1/x");
  CHECK(hub::resolve_location(base, "https://h/x") == "https://h/x");
  CHECK_FALSE(hub::resolve_location("not a url", "/x"));
  CHECK(hub::url_origin("https://HF.co/api") == hub::url_origin("https://hf.co:443/x"));
  CHECK(hub::url_origin("http://h/x") == "http://h:80");
  CHECK(hub::url_origin("http://[::1]:9/x") == "http://[::1]:9");
  CHECK(hub::url_origin("http://h:1/") != hub::url_origin("http://h:2/"));
  CHECK(hub::url_origin("http://h/") != hub::url_origin("https://h/"));

  auto repo = hub::api_repo_in_url("https://m/hf/api/models/org/name/tree/x?y", "https://m/hf");
  REQUIRE(repo);
  REQUIRE(*repo);
  CHECK((*repo)->kind == hub::RepoKind::model);
  CHECK((*repo)->repo.str() == "org/name");
  auto plain = hub::api_repo_in_url("https://h/api/kernels/org/name", "https://h");
  REQUIRE(plain);
  REQUIRE(*plain);
  CHECK((*plain)->kind == hub::RepoKind::kernel);
  auto other = hub::api_repo_in_url("https://h/api/resolve-cache/x", "https://h");
  REQUIRE(other);
  CHECK_FALSE(*other);
  auto hostile = hub::api_repo_in_url("https://h/api/kernels/..%2F/x/refs", "https://h");
  REQUIRE_FALSE(hostile);
  CHECK(hostile.error().code == ErrorCode::malformed_response);
}

TEST_CASE("tokens: blank values are no token, token paths expand ~ and $VAR",
          "[hub][realism][token]") {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() / "hf");
  std::ofstream(dir.path() / "hf" / "token") << "hf_home\n";
  std::ofstream(dir.path() / "blank") << " \n\t\n";
  util::Environment env;
  env.set("HOME", dir.path().string());
  env.set("HF_TOKEN", "   ");
  env.set("HF_HOME", "~/hf");
  CHECK(hub::HubConfig::from(env).token == "hf_home");  // the blank HF_TOKEN is skipped
  env.set("HUGGING_FACE_HUB_TOKEN", "\t");
  CHECK(hub::HubConfig::from(env).token == "hf_home");
  env.set("ROOT", dir.path().string());
  env.set("HF_HOME", "${ROOT}/hf");
  CHECK(hub::HubConfig::from(env).token == "hf_home");
  env.set("HF_TOKEN_PATH", "$ROOT/blank");
  CHECK_FALSE(hub::HubConfig::from(env).token.has_value());
  env.set("HF_TOKEN", " hf_set ");
  CHECK(hub::HubConfig::from(env).token == "hf_set");
}
