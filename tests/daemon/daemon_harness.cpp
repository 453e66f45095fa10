#include "daemon/daemon_harness.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>

#include "kernelhub/hub/server/store_publisher.hpp"

namespace kernelhub::testing {
namespace fs = std::filesystem;

DaemonHarness::DaemonHarness(std::optional<std::string> policy_toml,
                             const std::map<std::string, std::string>& extra_env,
                             std::chrono::seconds resolve_ttl, std::string http_listen)
    : socket(fx.tmp.path() / "run" / "kernelhub.sock"),
      cache_dir(fx.tmp.path() / "daemon-cache"),
      policy_file(fx.tmp.path() / "policy.toml") {
  daemon::DaemonOptions options;
  options.socket_path = socket;
  options.cache_dir = cache_dir;
  options.env = fx.env();
  for (const auto& [name, value] : extra_env) options.env.set(name, value);
  options.use_socket_activation = false;
  options.resolve_ttl = resolve_ttl;
  options.shutdown_grace = std::chrono::seconds(5);
  options.http_listen = std::move(http_listen);
  if (policy_toml) {
    std::ofstream(policy_file) << *policy_toml;
    options.policy_file = policy_file;
  }
  daemon = std::make_unique<daemon::Daemon>(std::move(options));
  // Started here, so the daemon is listening when the constructor returns; its accept loop
  // then steps on its own thread until the destructor asks it to stop.
  auto started = daemon->start();
  if (!started) FAIL("daemon did not start: " << started.error().message);
  thread_ = std::thread([this] {
    while (daemon->step(std::chrono::seconds(1))) {
    }
    if (daemon->finish() != daemon::Daemon::Finish::clean) run_error_ = "work abandoned at stop";
  });
}

DaemonHarness::~DaemonHarness() {
  daemon->request_stop();
  thread_.join();
  if (run_error_) FAIL_CHECK("daemon: " << *run_error_);
}

void DaemonHarness::publish(const trust::RepoId& repo, const std::string& branch,
                            const std::filesystem::path& source, const std::string& message) {
  hub::server::PublishRequest request;
  request.root = fx.store;
  request.repo = repo;
  request.branch = branch;
  request.source = source;
  request.message = message;
  request.timestamp = 1700000000;
  REQUIRE(hub::server::publish_directory(request));
}

void DaemonHarness::publish_sage() { publish(kSageRepo, "v1", fx.tmp.path() / "src"); }

namespace {

// A REQUIRE for the main thread that shows the error's message.
template <typename T>
T required(Result<T> result) {
  if (!result) FAIL(result.error().message);
  return std::move(*result);
}

}  // namespace

TestClient::TestClient(const fs::path& socket) : TestClient(required(connect(socket))) {}

Result<TestClient> TestClient::connect(const fs::path& socket) {
  auto fd = proto::connect_unix(socket);
  if (!fd) return fail(std::move(fd).error());
  return TestClient(std::move(*fd));
}

nlohmann::json TestClient::hello(int protocol, std::vector<std::string> caps) {
  return required(try_hello(protocol, std::move(caps)));
}

Reply TestClient::call(const nlohmann::json& request) { return required(try_call(request)); }

Result<nlohmann::json> TestClient::try_hello(int protocol, std::vector<std::string> caps) {
  KH_TRY(proto::send_frame(fd_.get(), {{"type", "hello"},
                                       {"protocol", protocol},
                                       {"capabilities", caps},
                                       {"client", "daemon-test"}}));
  auto frame = read();
  if (!frame) return fail(std::move(frame).error());
  if (!*frame) return fail(ErrorCode::network, "the daemon closed the connection before hello");
  return std::move((*frame)->message);
}

Result<Reply> TestClient::try_call(const nlohmann::json& request) {
  KH_TRY(proto::send_frame(fd_.get(), request));
  Reply reply;
  for (;;) {
    auto frame = read();
    if (!frame) return fail(std::move(frame).error());
    if (!*frame) return fail(ErrorCode::network, "the daemon closed the connection before a reply");
    if ((*frame)->message.at("type") == "progress") {
      ++reply.progress_events;
      continue;
    }
    reply.frame = std::move((*frame)->message);
    reply.fds = std::move((*frame)->fds);
    return reply;
  }
}

nlohmann::json fetch_request(const trust::RepoId& repo, std::uint64_t id,
                             std::map<std::string, std::string> env) {
  return {{"type", "fetch"},         {"id", id},         {"repo", repo.str()}, {"version", 1},
          {"torch_version", "2.15"}, {"backend", "cpu"}, {"env", env}};
}

std::future<Result<std::pair<nlohmann::json, double>>> fetch_async(const fs::path& socket,
                                                                   nlohmann::json request) {
  return std::async(
      std::launch::async,
      [socket, request = std::move(request)]() -> Result<std::pair<nlohmann::json, double>> {
        auto client = TestClient::connect(socket);
        if (!client) return fail(std::move(client).error());
        if (auto hello = client->try_hello(); !hello) return fail(hello.error());
        const auto begin = std::chrono::steady_clock::now();
        auto reply = client->try_call(request);
        if (!reply) return fail(std::move(reply).error());
        return std::pair{
            reply->frame,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count()};
      });
}

std::string read_fd(int fd) {
  std::string out;
  char buffer[65536];
  off_t offset = 0;
  for (ssize_t n; (n = ::pread(fd, buffer, sizeof buffer, offset)) > 0; offset += n)
    out.append(buffer, n);
  return out;
}

std::size_t open_fd_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

}  // namespace kernelhub::testing
