// libFuzzer harness: kernelhubd's local Hub (--http) request handling. Raw bytes are one HTTP
// request to the real routes (daemon/local_hub_routes.cpp) over a real FetchService and
// upstream memo, whose upstream is `kernelhub serve` on loopback (in-process) with a small
// published repo; the policy trusts kernels-community only. Properties: no crash, a
// well-formed status line, never a 500.
#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "daemon/counters.hpp"
#include "daemon/fetch_service.hpp"
#include "daemon/host_checks.hpp"
#include "daemon/local_hub_routes.hpp"
#include "daemon/upstream_metadata.hpp"
#include "fuzz/fuzz_store.hpp"
#include "fuzz/http_stream.hpp"
#include "hub/server/hub_server.hpp"

using namespace kernelhub;
namespace fs = std::filesystem;

namespace {

struct World {
  fs::path dir;
  std::unique_ptr<hub::server::HubServer> upstream;
  daemon::AtomicCounters counters;
  std::unique_ptr<daemon::FetchService> service;
  std::unique_ptr<daemon::UpstreamMetadata> metadata;
  std::unique_ptr<daemon::LocalHubRoutes> routes;
  fuzzing::StreamServer server;
};

World* world = nullptr;

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
  world->upstream = std::make_unique<hub::server::HubServer>(options);
  if (!world->upstream->start()) std::abort();

  trust::Environment env;
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
  world->routes = std::make_unique<daemon::LocalHubRoutes>(
      daemon::RoutesContext{*world->service, *world->metadata, world->counters});
  world->server.set_payload_max_length(std::size_t{64} * 1024);
  world->routes->register_on(world->server);
  return 0;
}

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzzing::serve_and_check(world->server, data, size);
  return 0;
}
