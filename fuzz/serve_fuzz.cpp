// libFuzzer harness: `kernelhub serve`'s request handling. Raw bytes are one HTTP request to
// the real cpp-httplib server with the real routes (hub_routes.cpp over the store source,
// file_routes.cpp), driven through httplib's Stream interface, no socket: request line and path
// decoding, query strings, Range headers, paths-info bodies. The store behind it holds one small
// published kernel repo, made once. Properties: no crash, a well-formed status line, and never a
// 500 (a store that is fine gives no internal error, whatever the request).
#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_store.hpp"
#include "http_stream.hpp"
#include "kernelhub/hub/server/server_context.hpp"
#include "kernelhub/hub/server/store_publisher.hpp"

using namespace kernelhub;
using namespace kernelhub::hub::server;
using kernelhub::fuzzing::serve_and_check;
using kernelhub::fuzzing::StreamServer;
using kernelhub::http::register_error_handler;
namespace fs = std::filesystem;

namespace {

struct World {
  fs::path dir;
  std::unique_ptr<ServerContext> ctx;
  StreamServer server;
};

World* world = nullptr;

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  world = new World;
  char tmpl[] = "/tmp/kh-serve-fuzz-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) std::abort();
  world->dir = tmpl;
  std::atexit([] { fs::remove_all(world->dir); });
  kernelhub::fuzzing::make_store(world->dir / "store", world->dir / "src");
  ServerOptions options;
  options.root = world->dir / "store";
  options.tree_page_size = 2;  // pagination (Link) with a small repo
  world->ctx = std::make_unique<ServerContext>(options);
  auto& server = world->server;
  server.set_payload_max_length(1u << 20);
  register_error_handler(server);
  register_store_routes(server, *world->ctx);
  return 0;
}

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  serve_and_check(world->server, data, size);
  return 0;
}
