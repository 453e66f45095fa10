#include "tests/daemon/daemon_harness.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>

#include "hub/server/store_publisher.hpp"

namespace kernelhub::testing {
namespace fs = std::filesystem;

DaemonHarness::DaemonHarness(std::optional<std::string> policy_toml)
    : socket(fx.tmp.path() / "run" / "kernelhub.sock"),
      cache_dir(fx.tmp.path() / "daemon-cache"),
      policy_file(fx.tmp.path() / "policy.toml") {
  daemon::DaemonOptions options;
  options.socket_path = socket;
  options.cache_dir = cache_dir;
  options.env = fx.env();
  options.use_socket_activation = false;
  options.shutdown_grace = std::chrono::seconds(5);
  if (policy_toml) {
    std::ofstream(policy_file) << *policy_toml;
    options.policy_file = policy_file;
  }
  daemon = std::make_unique<daemon::Daemon>(std::move(options));
  thread_ = std::thread([this] {
    auto result = daemon->run();
    if (!result) FAIL_CHECK("daemon: " << result.error().message);
  });
  for (int i = 0; i < 500 && !daemon->ready(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(daemon->ready());
}

DaemonHarness::~DaemonHarness() {
  daemon->request_stop();
  thread_.join();
}

void DaemonHarness::publish_sage() {
  hub::server::PublishRequest request;
  request.root = fx.store;
  request.repo = kSageRepo;
  request.branch = "v1";
  request.source = fx.tmp.path() / "src";
  request.message = "build";
  request.timestamp = 1700000000;
  REQUIRE(hub::server::publish_directory(request));
}

TestClient::TestClient(const fs::path& socket)
    : fd_([&] {
        auto fd = proto::connect_unix(socket);
        REQUIRE(fd);
        return std::move(*fd);
      }()),
      reader_(fd_.get()) {}

nlohmann::json TestClient::hello(int protocol, std::vector<std::string> caps) {
  REQUIRE(proto::send_frame(fd_.get(), {{"type", "hello"},
                                        {"protocol", protocol},
                                        {"capabilities", caps},
                                        {"client", "daemon-test"}}));
  auto frame = read();
  REQUIRE(frame);
  REQUIRE(*frame);
  return (*frame)->message;
}

Reply TestClient::call(const nlohmann::json& request) {
  REQUIRE(proto::send_frame(fd_.get(), request));
  Reply reply;
  for (;;) {
    auto frame = read();
    REQUIRE(frame);
    REQUIRE(*frame);
    if ((*frame)->message.at("type") == "progress") {
      ++reply.progress_events;
      continue;
    }
    reply.frame = (*frame)->message;
    reply.fds = std::move((*frame)->fds);
    return reply;
  }
}

nlohmann::json fetch_request(const trust::RepoId& repo, std::uint64_t id,
                             std::map<std::string, std::string> env) {
  return {{"type", "fetch"},         {"id", id},         {"repo", repo.str()}, {"version", 1},
          {"torch_version", "2.15"}, {"backend", "cpu"}, {"env", env}};
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
