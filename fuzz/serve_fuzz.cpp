// libFuzzer harness: `kernelhub serve`'s request handling. Raw bytes are one HTTP request to
// the real cpp-httplib server with the real routes (api_routes.cpp, file_routes.cpp), driven
// through httplib's Stream interface, no socket: request line and path decoding, query
// strings, Range headers, paths-info bodies. The store behind it holds one small published
// kernel repo, made once. Properties: no crash, a well-formed status line, and never a 500
// (a store that is fine gives no internal error, whatever the request).
#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "hub/server/server_context.hpp"
#include "hub/server/store_publisher.hpp"

using namespace kernelhub;
using namespace kernelhub::hub::server;
namespace fs = std::filesystem;

namespace {

// The request comes from the fuzz input; the response goes to a string.
class InputStream final : public httplib::Stream {
 public:
  explicit InputStream(std::string_view in) : in_(in) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return out.size() < (8u << 20); }
  ssize_t read(char* ptr, size_t size) override {
    const auto n = std::min(size, in_.size());
    std::copy_n(in_.data(), n, ptr);
    in_.remove_prefix(n);
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8080;
  }
  socket_t socket() const override { return -1; }

  std::string out;

 private:
  std::string_view in_;
};

// process_request is protected: the one entry point that takes a Stream.
class StreamServer final : public httplib::Server {
 public:
  bool serve(httplib::Stream& stream) {
    bool closed = false;
    return process_request(stream, /*close_connection=*/true, closed, [](httplib::Request&) {});
  }
};

struct World {
  fs::path dir;
  std::unique_ptr<ServerContext> ctx;
  StreamServer server;
};

World* world = nullptr;

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A small kernel repo, published on main and v1 (one file large enough for LFS).
void make_store(const fs::path& root, const fs::path& source) {
  const std::string variant = "build/torch-universal/relu/";
  write_file(source / (variant + "__init__.py"), "from ._ops import ops\n");
  write_file(source / (variant + "_ops.py"), "ops = None\n");
  write_file(source / (variant + "metadata.json"), R"({"python-depends": []})");
  write_file(source / "build/torch29-cxx11-cpu-x86_64-linux/relu/_relu.abi3.so",
             std::string(kLfsThreshold + 17, '\x7f'));
  write_file(source / "README.md", "# relu\n");
  auto repo = trust::RepoId::parse("kernels-community/relu");
  if (!repo) std::abort();
  for (const char* branch : {"main", "v1"}) {
    PublishRequest request;
    request.root = root;
    request.repo = *repo;
    request.branch = branch;
    request.message = "fuzz seed";
    request.source = source;
    request.timestamp = 1'700'000'000;
    if (!publish_directory(request)) std::abort();
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  world = new World;
  char tmpl[] = "/tmp/kh-serve-fuzz-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) std::abort();
  world->dir = tmpl;
  std::atexit([] { fs::remove_all(world->dir); });
  make_store(world->dir / "store", world->dir / "src");
  ServerOptions options;
  options.root = world->dir / "store";
  options.tree_page_size = 2;  // pagination (Link) with a small repo
  world->ctx = std::make_unique<ServerContext>(options);
  auto& server = world->server;
  server.set_payload_max_length(1u << 20);
  register_error_handler(server);
  register_api_routes(server, *world->ctx);
  register_file_routes(server, *world->ctx);
  return 0;
}

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  InputStream stream(std::string_view(reinterpret_cast<const char*>(data), size));
  (void)world->server.serve(stream);
  const std::string& out = stream.out;
  if (!out.empty() && !out.starts_with("HTTP/1.1 ")) __builtin_trap();
  if (out.starts_with("HTTP/1.1 500")) __builtin_trap();
  return 0;
}
