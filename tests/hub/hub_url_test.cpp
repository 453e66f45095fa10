// Hub URLs are built from checked parts in one place (hub::repo_url), and curl sends them as
// built: HubApi refuses a revision, path or repo id that would make a URL of one repo name
// another (dot segments raw or encoded, encoded slashes, control characters) before any
// request, refuses redirects and next-page links with dot segments, and a path goes out as is.
#include <catch2/catch.hpp>

#include <mutex>

#include "hub/local_http_server.hpp"
#include "kernelhub/hub/api_url.hpp"
#include "kernelhub/hub/hub_api.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

const trust::RepoId kRepo{"kernels-community", "relu"};
const std::string kSha = "0123456789abcdef0123456789abcdef01234567";

// A server that records every request target as sent (not decoded) and answers `answer`.
struct RecordingHub {
  LocalHttpServer http;
  std::mutex mutex;
  std::vector<std::string> targets;
  std::function<void(const httplib::Request&, httplib::Response&)> answer =
      [](const httplib::Request&, httplib::Response& res) { res.status = 404; };

  RecordingHub() {
    const auto record = [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(mutex);
        targets.push_back(req.target);
      }
      answer(req, res);
    };
    http.server.Get(".*", record);
    http.start();
  }
  std::vector<std::string> seen() {
    std::lock_guard lock(mutex);
    return targets;
  }
};

}  // namespace

TEST_CASE("repo_url builds each route from checked, encoded parts", "[hub][url]") {
  using hub::RepoKind;
  using hub::RepoRoute;
  const std::string e = "https://hub.test/hf";
  CHECK(*hub::repo_url(e, RepoKind::kernel, kRepo, RepoRoute::refs) ==
        e + "/api/kernels/kernels-community/relu/refs");
  CHECK(*hub::repo_url(e, RepoKind::model, kRepo, RepoRoute::revision, "refs/pr/1") ==
        e + "/api/models/kernels-community/relu/revision/refs%2Fpr%2F1");
  CHECK(*hub::repo_url(e, RepoKind::kernel, kRepo, RepoRoute::tree, kSha) ==
        e + "/api/kernels/kernels-community/relu/tree/" + kSha);
  CHECK(*hub::repo_url(e, RepoKind::kernel, kRepo, RepoRoute::tree, "v1", "build/a b") ==
        e + "/api/kernels/kernels-community/relu/tree/v1/build/a%20b");
  CHECK(*hub::repo_url(e, RepoKind::kernel, kRepo, RepoRoute::commits, kSha) ==
        e + "/api/kernels/kernels-community/relu/commits/" + kSha);
  CHECK(*hub::repo_url(e, RepoKind::kernel, kRepo, RepoRoute::resolve, "main", "README.md") ==
        e + "/kernels/kernels-community/relu/resolve/main/README.md");
  CHECK(*hub::repo_url(e, RepoKind::model, kRepo, RepoRoute::resolve, "main", "a/b.py") ==
        e + "/kernels-community/relu/resolve/main/a/b.py");

  struct Bad {
    trust::RepoId repo;
    RepoRoute route;
    std::string revision;
    std::string path;
    ErrorCode code;
  };
  const std::vector<Bad> bad{
      {kRepo, RepoRoute::revision, "..", "", ErrorCode::invalid_argument},
      {kRepo, RepoRoute::revision, ".", "", ErrorCode::invalid_argument},
      {kRepo, RepoRoute::revision, "", "", ErrorCode::invalid_argument},
      {kRepo, RepoRoute::revision, "v1/../../x", "", ErrorCode::invalid_argument},
      {kRepo, RepoRoute::revision, "%2e%2e", "", ErrorCode::invalid_argument},
      {kRepo, RepoRoute::commits, "a\nb", "", ErrorCode::invalid_argument},
      {kRepo, RepoRoute::tree, kSha, "../../../../x/y/tree/main", ErrorCode::unsafe_path},
      {kRepo, RepoRoute::tree, kSha, ".", ErrorCode::unsafe_path},
      {kRepo, RepoRoute::tree, kSha, "build/./x", ErrorCode::unsafe_path},
      {kRepo, RepoRoute::tree, kSha, "build%2F..%2Fx", ErrorCode::unsafe_path},
      {kRepo, RepoRoute::tree, kSha, "%2E%2e/x", ErrorCode::unsafe_path},
      {kRepo, RepoRoute::resolve, "main", "", ErrorCode::unsafe_path},
      {kRepo, RepoRoute::resolve, "main", "/etc/passwd", ErrorCode::unsafe_path},
      {kRepo, RepoRoute::resolve, "..", "x", ErrorCode::invalid_argument},
      {trust::RepoId{"kernels-community", "."}, RepoRoute::refs, "", "",
       ErrorCode::invalid_argument},
      {trust::RepoId{"..", "x"}, RepoRoute::refs, "", "", ErrorCode::invalid_argument},
      {trust::RepoId{"a/b", "c"}, RepoRoute::refs, "", "", ErrorCode::invalid_argument},
  };
  for (const auto& b : bad) {
    INFO(b.repo.str() << " " << static_cast<int>(b.route) << " rev=" << b.revision
                      << " path=" << b.path);
    auto url = hub::repo_url(e, RepoKind::kernel, b.repo, b.route, b.revision, b.path);
    REQUIRE_FALSE(url);
    CHECK(url.error().code == b.code);
  }
}

TEST_CASE("has_dot_segment sees raw and encoded dot segments", "[hub][url]") {
  for (const char* dotted :
       {"https://h/api/kernels/a/b/tree/x/../../c/d", "https://h/a/./b", "https://h/a/..",
        "https://h/a/%2e%2e/b", "https://h/a/%2E%2e", "https://h/a/.%2E/b", "https://h/a%2F..%2Fb",
        "https://h/a%2f.", "/api/kernels/a/b/../c", "https://h/.?x=1"}) {
    INFO(dotted);
    CHECK(hub::has_dot_segment(dotted));
  }
  for (const char* plain :
       {"https://h/api/kernels/a/b/tree/main/build%2Fx?cursor=2", "https://h/a/.b/c..d/...",
        "https://h/a?x=/../", "https://h/", "https://h", "https://h/a/%2e%2ex"}) {
    INFO(plain);
    CHECK_FALSE(hub::has_dot_segment(plain));
  }
}

TEST_CASE("HubApi asks nothing for a revision, path or repo that repo_url refuses", "[hub][url]") {
  RecordingHub hub;
  hub::HubConfig config;
  config.endpoint = hub.http.endpoint();
  config.token = "hf_secret";
  hub::CurlHttpClient http(config);
  hub::HubApi api(config, http);

  const auto refused = [](const auto& result, ErrorCode code) {
    REQUIRE_FALSE(result);
    CHECK(result.error().code == code);
  };
  refused(api.resolve_revision(kRepo, ".."), ErrorCode::invalid_argument);
  refused(api.resolve_revision(kRepo, "%2e%2e"), ErrorCode::invalid_argument);
  refused(api.list_tree(kRepo, kSha, "../../../../private/repo/tree/main", false),
          ErrorCode::unsafe_path);
  refused(api.list_tree(kRepo, "..", "", false), ErrorCode::invalid_argument);
  refused(api.list_tree(kRepo, kSha, ".", true), ErrorCode::unsafe_path);
  refused(api.read_optional_file(kRepo, kSha, "build/../../x", 100), ErrorCode::unsafe_path);
  refused(api.read_optional_file(kRepo, kSha, "a/%2e%2e/b", 100), ErrorCode::unsafe_path);
  refused(api.history_contains(kRepo, "../x", kSha, 10), ErrorCode::invalid_argument);
  refused(api.resolve_url(kRepo, kSha, "../x"), ErrorCode::unsafe_path);
  refused(api.list_refs(trust::RepoId{"kernels-community", "."}), ErrorCode::invalid_argument);
  CHECK(hub.seen().empty());
}

TEST_CASE("curl sends a path as built, without removing dot segments", "[hub][url]") {
  RecordingHub hub;
  hub.answer = [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  };
  hub::HubConfig config;
  config.endpoint = hub.http.endpoint();
  hub::CurlHttpClient http(config);
  hub::HttpRequest request;
  request.url = hub.http.endpoint() + "/api/kernels/a/b/tree/x/../../../c/d/tree/main";
  REQUIRE(http.send(request));
  // Without CURLOPT_PATH_AS_IS curl would have sent /api/kernels/c/d/tree/main.
  CHECK(hub.seen() == std::vector<std::string>{"/api/kernels/a/b/tree/x/../../../c/d/tree/main"});
}

TEST_CASE("HubApi follows no redirect and no next page that leaves the repo's listing",
          "[hub][url]") {
  RecordingHub hub;
  const std::string endpoint = hub.http.endpoint();
  hub.answer = [&](const httplib::Request& req, httplib::Response& res) {
    if (req.path.find("/revision/") != std::string::npos) {  // a redirect with dot segments
      res.status = 307;
      res.set_header("Location",
                     "/api/kernels/kernels-community/relu/revision/x/../../../../"
                     "private/repo/revision/main");
      return;
    }
    res.set_content("[]", "application/json");
    if (req.path.ends_with("/tree/" + kSha)) {  // first page: next names another repo
      res.set_header("Link", "<" + endpoint + "/api/kernels/private/repo/tree/main?cursor=1>; " +
                                 "rel=\"next\"");
    } else if (req.path.ends_with("/tree/" + kSha + "/build")) {  // next with dot segments
      res.set_header("Link", "</api/kernels/kernels-community/relu/tree/" + kSha +
                                 "/build/%2e%2e/%2e%2e?cursor=1>; rel=\"next\"");
    }
  };
  hub::HubConfig config;
  config.endpoint = endpoint;
  hub::CurlHttpClient http(config);
  hub::HubApi api(config, http);

  auto revision = api.resolve_revision(kRepo, "main");
  REQUIRE_FALSE(revision);
  CHECK(revision.error().code == ErrorCode::malformed_response);
  CHECK(revision.error().message.find("'.' or '..' segment") != std::string::npos);
  for (const std::string folder : {"", "build"}) {
    INFO(folder);
    auto tree = api.list_tree(kRepo, kSha, folder, false);
    REQUIRE_FALSE(tree);
    CHECK(tree.error().code == ErrorCode::malformed_response);
    CHECK(tree.error().message.find("leaves its listing") != std::string::npos);
  }
  for (const auto& target : hub.seen()) {
    INFO(target);
    CHECK(target.starts_with("/api/kernels/kernels-community/relu/"));
    CHECK(target.find("..") == std::string::npos);
    CHECK(target.find("%2e") == std::string::npos);
  }
  CHECK(hub.seen().size() == 3);  // the redirect, and each listing's first page only
}
