// libFuzzer harness: kernelhubd's local Hub (--http) request handling. Raw bytes are one HTTP
// request to the real routes (the Hub-API route table over daemon/cache_source.cpp) over a real
// FetchService and upstream memo, whose upstream is `kernelhub serve` on loopback (in-process) with
// a small published repo; the policy trusts kernels-community only. Properties: no crash, a
// well-formed status line, never a 500, and the upstream hears only of the repo the request
// names (upstream_in_scope below, checked on the HubServer's request log after each input).
#include <httplib.h>

#include <mutex>
#include <utility>
#include <vector>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_store.hpp"
#include "http_stream.hpp"
#include "kernelhub/daemon/cache_source.hpp"
#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/daemon/fetch_service.hpp"
#include "kernelhub/daemon/host_checks.hpp"
#include "kernelhub/daemon/upstream_metadata.hpp"
#include "kernelhub/hub/server/hub_server.hpp"

using namespace kernelhub;
namespace fs = std::filesystem;

namespace {

// The upstream's log of the paths it was asked for (its after-route hook).
class PathLog final : public hub::server::ServeHooks {
 public:
  void after_route(const httplib::Request& req, httplib::Response&) override {
    std::lock_guard lock(mutex_);
    paths_.push_back(req.path);
  }
  std::vector<std::string> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(paths_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> paths_;
};

struct World {
  fs::path dir;
  std::shared_ptr<PathLog> upstream_log = std::make_shared<PathLog>();
  std::unique_ptr<hub::server::HubServer> upstream;
  daemon::AtomicCounters counters;
  std::unique_ptr<daemon::FetchService> service;
  std::unique_ptr<daemon::UpstreamMetadata> metadata;
  std::unique_ptr<daemon::CacheSource> source;
  fuzzing::StreamServer server;
  std::string asked;  // the decoded path of the request being served (pre-routing hook)
};

World* world = nullptr;

std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start <= path.size();) {
    const auto slash = path.find('/', start);
    const auto end = slash == std::string_view::npos ? path.size() : slash;
    out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The repos a local Hub route may read from `path` (cpp-httplib's decoded path): org and
// name sit at fixed places, /api/{kernels,models}/ORG/NAME/..., /kernels/ORG/NAME/resolve/...
// or /ORG/NAME/resolve/...; anything a traversal adds comes later and names none of them.
std::vector<std::string> repos_named(std::string_view path) {
  const auto s = segments(path);
  const auto at = [&](std::size_t i) { return i < s.size() ? s[i] : std::string(); };
  std::vector<std::string> repos;
  if (at(1) == "api" && (at(2) == "kernels" || at(2) == "models"))
    repos.push_back(at(3) + "/" + at(4));
  if (at(1) == "kernels" && at(4) == "resolve") repos.push_back(at(2) + "/" + at(3));
  if (at(3) == "resolve") repos.push_back(at(1) + "/" + at(2));
  return repos;
}

// One upstream request (the HubServer's decoded path) is a Hub call for one of `repos`: its
// refs, a revision, a tree or history listing, a file, or the LFS object a file redirects to;
// and no segment of it is '.' or '..'.
bool upstream_in_scope(const std::string& path, const std::vector<std::string>& repos) {
  for (const auto& part : segments(path)) {
    if (part == "." || part == "..") return false;
  }
  if (path.starts_with("/lfs-objects/")) return true;
  for (const auto& repo : repos) {
    for (const std::string& api : {"/api/kernels/" + repo, "/api/models/" + repo}) {
      if (!path.starts_with(api)) continue;
      const std::string_view rest = std::string_view(path).substr(api.size());
      if (rest == "/refs" || rest.starts_with("/revision/") || rest.starts_with("/tree/") ||
          rest.starts_with("/commits/"))
        return true;
    }
    for (const std::string& file : {"/kernels/" + repo + "/resolve/", "/" + repo + "/resolve/"}) {
      if (path.starts_with(file) && path.size() > file.size()) return true;
    }
  }
  return false;
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  world = new World;
  char tmpl[] = "/tmp/kh-local-hub-fuzz-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) std::abort();
  world->dir = tmpl;
  std::atexit([] { fs::remove_all(world->dir); });
  fuzzing::make_store(world->dir / "store", world->dir / "src");
  hub::server::ServerOptions options;
  options.root = world->dir / "store";
  options.hooks = world->upstream_log;
  world->upstream = std::make_unique<hub::server::HubServer>(options);
  if (!world->upstream->start()) std::abort();

  util::Environment env;
  env.set("HF_ENDPOINT", world->upstream->endpoint());
  env.set("KERNELHUB_RETRY_BASE_MS", "1");
  env.set("HF_HUB_ETAG_TIMEOUT", "2");
  env.set("HF_HUB_DOWNLOAD_TIMEOUT", "2");
  const fs::path cache = world->dir / "cache";
  fs::create_directories(cache);
  auto root_fd = daemon::open_cache_root(cache);
  if (!root_fd) std::abort();
  world->service = std::make_unique<daemon::FetchService>(
      cache, std::move(*root_fd), env, std::chrono::seconds(60), world->counters);
  world->metadata =
      std::make_unique<daemon::UpstreamMetadata>(env, std::chrono::seconds(60), world->counters);
  world->source =
      std::make_unique<daemon::CacheSource>(*world->service, *world->metadata, world->counters);
  world->server.set_payload_max_length(std::size_t{64} * 1024);
  world->server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    world->asked = req.path;
    return httplib::Server::HandlerResponse::Unhandled;
  });
  world->source->register_on(world->server);
  return 0;
}

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  world->upstream_log->take();
  world->asked.clear();
  fuzzing::serve_and_check(world->server, data, size);
  // The upstream hears only of the repo the request names (with kernelhubd's token, anything
  // else would be a read of another repo or endpoint on its behalf).
  const auto repos = repos_named(world->asked);
  for (const auto& path : world->upstream_log->take()) {
    if (!upstream_in_scope(path, repos)) __builtin_trap();
  }
  return 0;
}
