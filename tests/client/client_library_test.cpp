// kernelhub::client::Client as an app uses it: embedded mode without a daemon, the
// require-daemon rule, a socket that does not speak the protocol, and daemon mode against a
// real kernelhubd. Both modes must hand back fds whose bytes hash to the manifest.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "client/daemon_fixture.hpp"
#include "kernelhub/client/client.hpp"
#include "kernelhub/trust/digest.hpp"

namespace fs = std::filesystem;
using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

util::Environment base_env(const FixtureHub& hub, const fs::path& cache, const fs::path& socket) {
  util::Environment env;
  env.set("HF_ENDPOINT", hub.endpoint());
  env.set("HF_HUB_CACHE", cache.string());
  env.set("KERNELHUB_SOCKET", socket.string());
  return env;
}

fetch::Request relu_v1() {
  fetch::Request request(*trust::RepoId::parse("kernels-community/relu"), *fetch::Ref::version(1));
  request.variants = *fetch::VariantChoice::named(kVariant);
  return request;
}

std::string read_fd(int fd) {
  std::string bytes;
  char buffer[65536];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, offset);
    REQUIRE(n >= 0);
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
    offset += n;
  }
  return bytes;
}

std::string read_path(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every handed fd is a read-only regular file whose bytes hash to the manifest's sha256 and
// equal what the snapshot path shows.
void check_handed_files(const client::FetchedKernel& kernel) {
  REQUIRE(kernel.manifest.files.size() >= 4);
  REQUIRE(kernel.fds.size() == kernel.manifest.files.size());
  for (std::size_t i = 0; i < kernel.fds.size(); ++i) {
    const auto& file = kernel.manifest.files[i];
    const auto& fd = kernel.fds[i];
    INFO(file.path);
    REQUIRE(fd);
    struct stat st {};
    REQUIRE(::fstat(fd.get(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK(static_cast<std::uint64_t>(st.st_size) == file.size);
    const auto bytes = read_fd(fd.get());
    trust::Sha256 hash;
    hash.update(bytes);
    CHECK(hash.final_hex() == file.sha256);
    CHECK(bytes == read_path(kernel.manifest.snapshot_path / file.path));
  }
}

// A Unix socket server in a thread: accepts one connection, sends `reply`, closes.
class RogueServer {
 public:
  RogueServer(fs::path path, std::string reply) : path_(std::move(path)) {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(listener_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener_, 4) == 0);
    thread_ = std::thread([this, reply = std::move(reply)] {
      const int conn = ::accept(listener_, nullptr, nullptr);
      if (conn < 0) return;
      if (!reply.empty()) (void)!::write(conn, reply.data(), reply.size());
      ::shutdown(conn, SHUT_WR);
      char sink[4096];
      while (::read(conn, sink, sizeof sink) > 0) {
      }
      ::close(conn);
    });
  }
  ~RogueServer() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }

 private:
  fs::path path_;
  int listener_ = -1;
  std::thread thread_;
};

}  // namespace

TEST_CASE("without a socket the client fetches in-process and hands out verified fds",
          "[client][embedded]") {
  FixtureHub hub;
  TempDir dir;
  const auto env = base_env(hub, dir.path() / "cache", dir.path() / "no-such.sock");
  auto client = client::Client::open(env);
  REQUIRE(client);
  CHECK_FALSE(client->via_daemon());

  auto kernel = client->fetch(relu_v1());
  REQUIRE(kernel);
  CHECK_FALSE(kernel->via_daemon);
  CHECK(kernel->manifest.variants == std::vector<std::string>{kVariant});
  CHECK(kernel->manifest.snapshot_path.string().rfind((dir.path() / "cache").string(), 0) == 0);
  check_handed_files(*kernel);

  // Offline, from the cache alone: the same manifest (repo-relative paths) and fds.
  auto offline_env = env;
  offline_env.set("HF_HUB_OFFLINE", "1");
  auto offline = client::Client::open(offline_env);
  REQUIRE(offline);
  auto cached = offline->fetch(relu_v1());
  REQUIRE(cached);
  CHECK(cached->manifest.from_cache);
  REQUIRE(cached->manifest.files.size() == kernel->manifest.files.size());
  for (std::size_t i = 0; i < cached->manifest.files.size(); ++i) {
    CHECK(cached->manifest.files[i].path == kernel->manifest.files[i].path);
    CHECK(cached->manifest.files[i].path.rfind("build/" + kVariant + "/", 0) == 0);
  }
  check_handed_files(*cached);

  auto status = client->status();
  REQUIRE(status);
  CHECK((*status)["mode"] == "embedded");
  CHECK((*status)["cache_root"] == (dir.path() / "cache").string());
}

TEST_CASE("a stale socket file with nobody listening means embedded mode", "[client][embedded]") {
  TempDir dir;
  const auto socket = dir.path() / "stale.sock";
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    ::close(fd);  // the file stays; connecting to it is refused
  }
  REQUIRE(fs::exists(socket));
  util::Environment env;
  env.set("HF_HUB_CACHE", (dir.path() / "cache").string());
  client::ClientOptions options;
  options.socket = socket;
  auto client = client::Client::open(env, options);
  REQUIRE(client);
  CHECK_FALSE(client->via_daemon());
}

TEST_CASE("a required daemon that is not running is a typed network error", "[client][require]") {
  TempDir dir;
  const auto socket = dir.path() / "absent.sock";
  util::Environment env;
  env.set("HF_HUB_CACHE", (dir.path() / "cache").string());
  env.set("KERNELHUB_SOCKET", socket.string());

  SECTION("by option") {
    client::ClientOptions options;
    options.require_daemon = true;
    auto client = client::Client::open(env, options);
    REQUIRE_FALSE(client);
    CHECK(client.error().code == ErrorCode::network);
    CHECK(client.error().message.find(socket.string()) != std::string::npos);
    CHECK(client.error().message.find("KERNELHUB_REQUIRE_DAEMON") != std::string::npos);
  }
  SECTION("by KERNELHUB_REQUIRE_DAEMON=1") {
    env.set("KERNELHUB_REQUIRE_DAEMON", "1");
    auto client = client::Client::open(env);
    REQUIRE_FALSE(client);
    CHECK(client.error().code == ErrorCode::network);
  }
  CHECK_FALSE(fs::exists(dir.path() / "cache"));  // no embedded fetch machinery touched it
}

TEST_CASE("a socket that accepts but does not speak the protocol is an error, not a fallback",
          "[client][handshake]") {
  TempDir dir;
  const auto socket = dir.path() / "rogue.sock";
  util::Environment env;
  env.set("HF_HUB_CACHE", (dir.path() / "cache").string());
  env.set("KERNELHUB_SOCKET", socket.string());

  SECTION("HTTP instead of frames") {
    RogueServer server(socket, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    auto client = client::Client::open(env);
    REQUIRE_FALSE(client);
    CHECK(client.error().code != ErrorCode::invalid_argument);
  }
  SECTION("a valid frame that is not a hello") {
    const std::string json = R"({"type":"status","id":1})";
    std::string frame(4, '\0');
    frame[3] = static_cast<char>(json.size());
    RogueServer server(socket, frame + json);
    auto client = client::Client::open(env);
    REQUIRE_FALSE(client);
  }
  SECTION("closed without a word") {
    RogueServer server(socket, "");
    auto client = client::Client::open(env);
    REQUIRE_FALSE(client);
  }
  CHECK_FALSE(fs::exists(dir.path() / "cache"));
}

TEST_CASE("through kernelhubd the client gets the daemon's verified fds and counters",
          "[client][daemon]") {
  FixtureHub hub;
  DaemonFixture daemon(hub);
  TempDir dir;
  const auto env = base_env(hub, dir.path() / "user-cache", daemon.socket());
  auto client = client::Client::open(env);
  REQUIRE(client);
  REQUIRE(client->via_daemon());

  auto before = client->status();
  REQUIRE(before);
  CHECK((*before)["mode"] == "daemon");
  const auto requests_before = (*before)["counters"]["requests"].get<std::uint64_t>();

  auto kernel = client->fetch(relu_v1());
  REQUIRE(kernel);
  CHECK(kernel->via_daemon);
  CHECK_FALSE(kernel->manifest.from_cache);
  CHECK(kernel->manifest.snapshot_path.string().rfind(daemon.cache().string(), 0) == 0);
  check_handed_files(*kernel);
  CHECK_FALSE(fs::exists(dir.path() / "user-cache"));  // nothing went to the user's cache

  auto again = client->fetch(relu_v1());
  REQUIRE(again);
  CHECK(again->manifest.commit == kernel->manifest.commit);
  check_handed_files(*again);

  auto after = client->status();
  REQUIRE(after);
  CHECK((*after)["counters"]["requests"].get<std::uint64_t>() >= requests_before + 2);
  CHECK((*after)["counters"]["misses"].get<std::uint64_t>() >= 1);
  CHECK((*after)["counters"]["hits"].get<std::uint64_t>() >= 1);

  auto listing = client->ls();
  REQUIRE(listing);
  REQUIRE((*listing)["repos"].size() == 1);
  CHECK((*listing)["repos"][0]["repo"] == "kernels-community/relu");
}

TEST_CASE("daemon errors come back typed", "[client][daemon]") {
  FixtureHub hub;
  DaemonFixture daemon(hub);
  TempDir dir;
  auto env = base_env(hub, dir.path() / "user-cache", daemon.socket());

  SECTION("the client's DIFFUSERS_DISABLE_REMOTE_CODE applies to its request") {
    env.set("DIFFUSERS_DISABLE_REMOTE_CODE", "1");
    auto client = client::Client::open(env);
    REQUIRE(client);
    auto kernel = client->fetch(relu_v1());
    REQUIRE_FALSE(kernel);
    CHECK(kernel.error().code == ErrorCode::remote_code_disabled);
  }
  SECTION("an unknown repo") {
    auto client = client::Client::open(env);
    REQUIRE(client);
    auto request = relu_v1();
    request.repo = *trust::RepoId::parse("kernels-community/does-not-exist");
    auto kernel = client->fetch(request);
    REQUIRE_FALSE(kernel);
    CHECK(kernel.error().code == ErrorCode::repo_not_found);
    // The connection stays usable after an error reply.
    CHECK(client->status());
  }
}
