// kernelhubd's local Hub (--http) never lets a request's text leave the repo it names: dot
// segments (raw or percent-encoded), encoded slashes and '.'/'..' revisions are refused at the
// route with a 400, before anything is asked upstream with the daemon's token. The upstream
// is a real HubServer holding a private repo of another publisher; its request log is the
// witness.
#include <httplib.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "daemon/daemon_harness.hpp"
#include "kernelhub/hub/server/store_publisher.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

const trust::RepoId kPrivateRepo{"private-org", "secret-kernel"};
constexpr const char* kSecretEntry = "SECRET-entry-4d1f.txt";  // only in the private repo

// The private repo: readable only with a token (the daemon's HF_TOKEN), of a publisher the
// admin policy does not trust.
void publish_private(DaemonHarness& h) {
  const auto source = h.fx.tmp.path() / "private-src";
  std::filesystem::create_directories(source);
  std::ofstream(source / kSecretEntry) << "private\n";
  h.publish(kPrivateRepo, "main", source, "private");
  testing::FaultPlan plan;
  plan.anonymous_401 = true;
  plan.private_repos = {kPrivateRepo.str()};
  h.fx.server->set_faults(plan);
}

// Upstream requests that are not one of the Hub calls for `repo` (API or resolve), or that
// carry a dot segment: what a traversal makes the daemon ask.
std::vector<std::string> outside_repo(const std::vector<testing::RequestRecord>& records,
                                      const trust::RepoId& repo) {
  std::vector<std::string> out;
  for (const auto& r : records) {
    const std::string& p = r.path;
    bool inside = false;
    for (const std::string& prefix :
         {"/api/kernels/" + repo.str() + "/", "/api/models/" + repo.str() + "/",
          "/kernels/" + repo.str() + "/resolve/", "/" + repo.str() + "/resolve/"}) {
      if (!p.starts_with(prefix)) continue;
      const std::string rest = p.substr(prefix.size());
      inside = prefix.ends_with("/resolve/") || rest == "refs" || rest.starts_with("revision/") ||
               rest.starts_with("tree/") || rest.starts_with("commits/");
    }
    const bool dots = p.find("/./") != std::string::npos || p.find("/../") != std::string::npos ||
                      p.ends_with("/.") || p.ends_with("/..");
    if (!inside || dots) out.push_back(r.method + " " + p + " (" + std::to_string(r.status) + ")");
  }
  return out;
}

}  // namespace

TEST_CASE("the local Hub refuses dot segments and encoded slashes before asking upstream",
          "[daemon][http][paths]") {
  DaemonHarness h(std::nullopt, {{"HF_TOKEN", "hf_daemon_secret_token"}}, std::chrono::seconds(60),
                  "127.0.0.1:0");
  publish_private(h);
  httplib::Client client("127.0.0.1", h.daemon->http_port());
  client.set_read_timeout(30, 0);
  client.set_url_encode(false);  // the bytes below go out exactly as written

  // The fault is real: the private repo answers the daemon's token, and no one else.
  {
    httplib::Client upstream("127.0.0.1", h.fx.server->port());
    auto anonymous = upstream.Get("/api/kernels/" + kPrivateRepo.str() + "/tree/main");
    REQUIRE(anonymous);
    CHECK(anonymous->status == 401);
    auto with_token = upstream.Get("/api/kernels/" + kPrivateRepo.str() + "/tree/main",
                                   {{"Authorization", "Bearer hf_daemon_secret_token"}});
    REQUIRE(with_token);
    CHECK(with_token->status == 200);
    CHECK(with_token->body.find(kSecretEntry) != std::string::npos);
  }

  const std::string repo = "/api/kernels/" + kKernelRepo.str();
  const std::string file = "/kernels/" + kKernelRepo.str() + "/resolve";
  const std::string target = kPrivateRepo.str() + "/tree/main";
  const std::vector<std::string> attacks = {
      repo + "/tree/v1/../../../../" + target,
      repo + "/tree/v1/%2e%2e/%2e%2e/%2e%2e/%2e%2e/" + target,
      repo + "/tree/v1/%2E%2e/%2e%2E/%2E%2E/.%2e/" + target,
      repo + "/tree/v1%2F..%2F..%2F..%2F..%2Fprivate-org%2Fsecret-kernel%2Ftree%2Fmain",
      repo + "/tree/main/build%2F..%2F..%2F..%2F..%2F..%2F" + target,
      file + "/main/../../../../" + target + "/x.txt",
      "/" + kKernelRepo.str() + "/resolve/main/%2e%2e/%2e%2e/%2e%2e/%2e%2e/" + target + "/x.txt",
      repo + "/revision/..",
      repo + "/revision/%2e%2e",
      repo + "/revision/.",
      repo + "/tree/../../../" + target,
      repo + "/tree/main/.",
      repo + "/tree/main/build/./" + kCpuVariant,
      file + "/main/./README.md",
      file + "/v1/build/" + kCpuVariant + "/../../README.md",
  };
  for (const auto& attack : attacks) {
    INFO(attack);
    h.fx.server->reset_requests();
    auto reply = client.Get(attack);
    REQUIRE(reply);
    const auto outside = outside_repo(h.fx.server->requests(), kKernelRepo);
    CHECK(outside == std::vector<std::string>{});
    // Refused at the route: nothing of it reaches the upstream at all.
    CHECK(h.fx.server->requests().empty());
    CHECK(reply->status == 400);
    CHECK(reply->get_header_value("X-Error-Code") == "BadRequest");
    const std::string text = reply->body + reply->get_header_value("X-Error-Message");
    INFO("reply: " << text);
    CHECK(text.find(kSecretEntry) == std::string::npos);
    CHECK(text.find("tree entry") == std::string::npos);  // no listing was read
  }
  // Each refusal is counted by its type.
  const auto counters = h.daemon->counters();
  const auto count = [&](const char* code) {
    const auto it = counters.errors_by_class.find(code);
    return it == counters.errors_by_class.end() ? 0 : it->second;
  };
  CHECK(count("invalid_request") == attacks.size());

  // The same routes still answer the plain forms.
  h.fx.server->reset_requests();
  auto tree = client.Get(repo + "/tree/v1/build");
  REQUIRE(tree);
  CHECK(tree->status == 200);
  auto readme = client.Get(file + "/main/README.md");
  REQUIRE(readme);
  CHECK(readme->status == 200);
  CHECK(outside_repo(h.fx.server->requests(), kKernelRepo) == std::vector<std::string>{});
}
