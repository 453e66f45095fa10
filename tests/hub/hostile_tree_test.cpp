// Tree listings with hostile names, served by a hand-written server (the store refuses to
// hold them): the fetch fails with unsafe_path before anything is created in the cache.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>

#include "hub/local_http_server.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;
namespace fs = std::filesystem;

namespace {

const std::string kSha(40, 'a');
const std::string kOid(40, 'b');
const std::string kVariant = "torch215-cxx11-cpu-x86_64-linux";

bool has_any_file(const fs::path& dir) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory()) return true;
  }
  return false;
}

struct HostileHub {
  LocalHttpServer http;
  std::atomic<int> file_requests{0};
  nlohmann::json build_listing = nlohmann::json::array(
      {{{"type", "directory"}, {"path", "build/" + kVariant}, {"oid", kOid}}});
  nlohmann::json variant_listing;

  HostileHub() {
    const std::string api = "/api/kernels/kernels-community/evil";
    http.server.Get(api + "/refs", [](const httplib::Request&, httplib::Response& res) {
      nlohmann::json refs{
          {"branches", {{{"name", "v1"}, {"ref", "refs/heads/v1"}, {"targetCommit", kSha}}}},
          {"converts", nlohmann::json::array()},
          {"tags", nlohmann::json::array()}};
      res.set_content(refs.dump(), "application/json");
    });
    http.server.Get(api + "/tree/" + kSha + "/build",
                    [this](const httplib::Request&, httplib::Response& res) {
                      res.set_content(build_listing.dump(), "application/json");
                    });
    http.server.Get(api + "/tree/" + kSha + "/build/" + kVariant,
                    [this](const httplib::Request&, httplib::Response& res) {
                      res.set_content(variant_listing.dump(), "application/json");
                    });
    http.server.Get(".*/resolve/.*", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.path.ends_with("/kernel-status.toml")) {  // the optional redirect file: absent
        res.status = 404;
        res.set_header("X-Error-Code", "EntryNotFound");
        return;
      }
      ++file_requests;
      res.set_content("x", "application/octet-stream");
    });
    http.start();
  }

  Result<hub::FetchResult> fetch(const fs::path& cache_root) {
    util::Environment env;
    env.set("HF_ENDPOINT", http.endpoint());
    env.set("KERNELHUB_RETRY_BASE_MS", "1");
    const auto config = hub::HubConfig::from(env);
    cache::KernelCache cache(cache_root);
    hub::CurlHttpClient client(config);
    hub::Fetcher fetcher(config, client, cache, trust::AdminPolicy{}, trust::TrustEnvironment{});
    fetch::Request request(trust::RepoId{"kernels-community", "evil"}, *fetch::Ref::version(1));
    request.variants = *fetch::VariantChoice::named(kVariant);
    return fetcher.fetch(request);
  }
};

nlohmann::json file_entry(const std::string& path) {
  return {{"type", "file"}, {"path", path}, {"oid", kOid}, {"size", 1}};
}

}  // namespace

TEST_CASE("hostile names in a variant listing are refused before any file is created") {
  const std::string prefix = "build/" + kVariant + "/";
  const std::string hostile =
      GENERATE(std::string("build/") + "torch215-cxx11-cpu-x86_64-linux/../../../../../tmp/x",
               std::string("/etc/passwd"),
               std::string("build/torch215-cxx11-cpu-x86_64-linux/a") + std::string(1, '\0') + "b",
               std::string("build/torch215-cxx11-cpu-x86_64-linux/") + std::string(10 * 1024, 'a'),
               std::string("build/torch215-cxx11-cpu-x86_64-linux/a\\..\\..\\b"),
               std::string("build/torch215-cxx11-cpu-x86_64-linux/%2e%2e/x"),
               std::string("build/other-variant/x.so"));
  HostileHub hub;
  hub.variant_listing =
      nlohmann::json::array({file_entry(prefix + "__init__.py"), file_entry(hostile)});
  TempDir tmp;
  const fs::path cache_root = tmp.path() / "cache";
  auto result = hub.fetch(cache_root);
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::unsafe_path);
  CHECK(result.error().message.size() < 1000);  // a 10 KB name is not echoed back whole
  CHECK_FALSE(has_any_file(cache_root));
  CHECK(hub.file_requests == 0);
}

TEST_CASE("a hostile variant folder name is refused") {
  HostileHub hub;
  hub.build_listing =
      nlohmann::json::array({{{"type", "directory"}, {"path", "build/.."}, {"oid", kOid}}});
  TempDir tmp;
  auto result = hub.fetch(tmp.path() / "cache");
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::unsafe_path);
  CHECK_FALSE(has_any_file(tmp.path() / "cache"));
}

TEST_CASE("an oid that is not a hex id never becomes a blob file name") {
  HostileHub hub;
  nlohmann::json entry = file_entry("build/" + kVariant + "/__init__.py");
  entry["oid"] = "../../../escape";
  hub.variant_listing = nlohmann::json::array({entry});
  TempDir tmp;
  auto result = hub.fetch(tmp.path() / "cache");
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::malformed_response);
  CHECK_FALSE(has_any_file(tmp.path() / "cache"));
  CHECK(hub.file_requests == 0);
}
