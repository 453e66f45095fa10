// HubApi against the real HubServer (pagination, HEAD metadata) and a hand-written server
// (legacy model-type repos).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "hub/fetch_fixture.hpp"
#include "hub/local_http_server.hpp"
#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/hub/server/store_publisher.hpp"
#include "kernelhub/trust/digest.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

// A HubServer over `store` whose tree and commit listings hold `page_size` entries a page,
// and a HubApi pointed at it.
struct PagedHub {
  testing::FaultHub server;
  std::unique_ptr<hub::CurlHttpClient> http;
  std::unique_ptr<hub::HubApi> api_owner;

  static hub::server::ServerOptions paged(const std::filesystem::path& store, std::size_t size) {
    hub::server::ServerOptions options;
    options.root = store;
    options.tree_page_size = size;
    return options;
  }
  PagedHub(const std::filesystem::path& store, std::size_t page_size)
      : server(paged(store, page_size)) {
    REQUIRE(server.start());
    util::Environment env;
    env.set("HF_ENDPOINT", server.endpoint());
    http = std::make_unique<hub::CurlHttpClient>(hub::HubConfig::from(env));
    api_owner = std::make_unique<hub::HubApi>(hub::HubConfig::from(env), *http);
  }
  hub::HubApi& api() { return *api_owner; }
  std::size_t count(const std::string& method, const std::string& part) const {
    return server.count(method, part);
  }
  void reset_requests() { server.reset_requests(); }
};

}  // namespace

TEST_CASE("list_tree follows Link rel=next pages and returns every entry once") {
  FetchFixture fx;
  PagedHub paged(fx.store, 2);
  auto& api = paged.api();
  auto entries = api.list_tree(kKernelRepo, fx.commit, "build/" + kCpuVariant, true);
  REQUIRE(entries);
  std::set<std::string> paths;
  for (const auto& e : *entries) paths.insert(e.path);
  CHECK(paths.size() == entries->size());
  CHECK(paths == std::set<std::string>{"build/" + kCpuVariant + "/__init__.py",
                                       "build/" + kCpuVariant + "/_ops.py",
                                       "build/" + kCpuVariant + "/" + kSoName,
                                       "build/" + kCpuVariant + "/metadata.json",
                                       "build/" + kCpuVariant + "/py.typed"});
  CHECK(paged.count("GET", "/tree/") >= 2);
}

TEST_CASE("resolve_revision maps branches to commits and returns a sha without a request") {
  FetchFixture fx;
  hub::CurlHttpClient http(fx.config());
  hub::HubApi api(fx.config(), http);
  auto main = api.resolve_revision(kKernelRepo, "main");
  REQUIRE(main);
  CHECK(*main == fx.commit);
  fx.server->reset_requests();
  auto sha = api.resolve_revision(kKernelRepo, fx.commit);
  REQUIRE(sha);
  CHECK(fx.server->requests().empty());
  auto refs = api.list_refs(kKernelRepo);
  REQUIRE(refs);
  CHECK(std::any_of(refs->branches.begin(), refs->branches.end(), [&](const hub::GitRef& r) {
    return r.name == "v1" && r.target_commit == fx.commit;
  }));
}

TEST_CASE("a legacy model-type kernel repo is found through the model paths, and remembered") {
  LocalHttpServer http;
  const std::string sha(40, 'c');
  int kernel_calls = 0;
  int model_calls = 0;
  http.server.Get("/api/kernels/.*", [&](const httplib::Request&, httplib::Response& res) {
    ++kernel_calls;
    res.status = 404;
    res.set_header("X-Error-Code", "RepoNotFound");
    res.set_content("{\"error\":\"Repository not found\"}", "application/json");
  });
  http.server.Get("/api/models/kernels-community/old/refs",
                  [&](const httplib::Request&, httplib::Response& res) {
                    ++model_calls;
                    nlohmann::json refs{{"branches", {{{"name", "v1"}, {"targetCommit", sha}}}},
                                        {"converts", nlohmann::json::array()},
                                        {"tags", nlohmann::json::array()}};
                    res.set_content(refs.dump(), "application/json");
                  });
  http.server.Get("/api/models/kernels-community/old/revision/main",
                  [&](const httplib::Request&, httplib::Response& res) {
                    ++model_calls;
                    res.set_content("{\"id\":\"kernels-community/old\",\"sha\":\"" + sha + "\"}",
                                    "application/json");
                  });
  http.server.Get("/api/models/.*",
                  [&](const httplib::Request&, httplib::Response& res) {  // after the routes above
                    res.status = 404;
                    res.set_header("X-Error-Code", "RepoNotFound");
                  });
  http.start();
  hub::HubConfig config;
  config.endpoint = http.endpoint();
  hub::CurlHttpClient client(config);
  hub::HubApi api(config, client);
  const trust::RepoId repo{"kernels-community", "old"};
  auto refs = api.list_refs(repo);
  REQUIRE(refs);
  CHECK(refs->branches.at(0).target_commit == sha);
  CHECK(api.kind(repo) == hub::RepoKind::model);
  CHECK(*api.resolve_url(repo, sha, "build/x.py") ==
        http.endpoint() + "/kernels-community/old/resolve/" + sha + "/build/x.py");
  auto main = api.resolve_revision(repo, "main");
  REQUIRE(main);
  CHECK(*main == sha);
  CHECK(kernel_calls == 1);  // the second call went straight to the model path
  CHECK(model_calls == 2);

  auto missing = api.list_refs(trust::RepoId{"kernels-community", "none"});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::repo_not_found);
}

TEST_CASE("history_contains walks the commit pages within its bound", "[history]") {
  FetchFixture fx;
  // Three more commits on v1: commit <- c1 <- c2 <- c3, read one per page.
  std::vector<std::string> chain{fx.commit};
  for (int i = 0; i < 3; ++i) {
    hub::server::PublishRequest request;
    request.root = fx.store;
    request.repo = kKernelRepo;
    request.branch = "v1";
    request.source = fx.tmp.path() / "src";
    request.message = "commit " + std::to_string(i);
    request.timestamp = 1'700'000'000 + i;
    auto published = hub::server::publish_directory(request);
    REQUIRE(published);
    chain.push_back(published->commit);
  }
  PagedHub paged(fx.store, 1);
  auto& api = paged.api();

  CHECK(*api.history_contains(kKernelRepo, chain[3], chain[0], 100));
  CHECK(paged.count("GET", "/commits/") == 4);  // one commit per page
  CHECK(*api.history_contains(kKernelRepo, chain[2], chain[2], 1));
  // Newer than the head is not in its history, and the bound stops the walk.
  CHECK_FALSE(*api.history_contains(kKernelRepo, chain[1], chain[3], 100));
  paged.reset_requests();
  CHECK_FALSE(*api.history_contains(kKernelRepo, chain[3], chain[0], 2));
  CHECK(paged.count("GET", "/commits/") == 2);
  // Hostile pages are malformed_response.
  CHECK(hub::parse_commits_json(R"([{"id":"zz"}])").error().code == ErrorCode::malformed_response);
  CHECK(hub::parse_commits_json(R"({"id":"x"})").error().code == ErrorCode::malformed_response);
}
