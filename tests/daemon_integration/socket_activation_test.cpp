// kernelhubd started by systemd-socket-activate (the same LISTEN_FDS protocol systemd uses):
// the first connection starts it, it announces READY=1 on NOTIFY_SOCKET, and `kernelhub
// download` goes through it.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
using nlohmann::json;

namespace {

// Our own notification socket: what systemd would read sd_notify messages from.
class NotifySocket {
 public:
  explicit NotifySocket(const std::filesystem::path& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error("bind notify");
  }
  ~NotifySocket() { ::close(fd_); }
  // Every datagram that arrives within `timeout`, concatenated, until one holds `want`.
  std::string wait_for(const std::string& want, std::chrono::milliseconds timeout) {
    std::string all;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (all.find(want) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) all.append(buf, static_cast<std::size_t>(n)).push_back('\n');
    }
    return all;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace

TEST_CASE("kernelhubd under systemd-socket-activate serves kernelhub download and reports READY",
          "[daemon][systemd]") {
  Workspace ws;
  NotifySocket notify(ws.dir.path() / "notify.sock");
  // systemd-socket-activate listens itself and execs kernelhubd (fd 3) on the first
  // connection, with a fresh environment: everything it needs goes through -E.
  const auto log = ws.dir.path() / "activate.log";
  Child activator({"systemd-socket-activate", "-l", ws.socket.string(), "-E",
                   "HF_ENDPOINT=" + ws.hub.endpoint(), "-E",
                   "NOTIFY_SOCKET=" + (ws.dir.path() / "notify.sock").string(), kKernelhubd,
                   "--cache-dir", ws.cache.string()},
                  {}, log);
  REQUIRE(wait_for_path(ws.socket));

  const auto result =
      run_kernelhub({"download", kRelu, "--version", "1", "--variant", kVariant, "--json"},
                    {{"KERNELHUB_SOCKET", ws.socket.string()},
                     {"KERNELHUB_REQUIRE_DAEMON", "1"},
                     {"HF_ENDPOINT", ws.hub.endpoint()}});
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  const auto out = json::parse(result.out);
  CHECK(out.at("via_daemon") == true);
  // The daemon's cache, not the user's: the snapshot lives under --cache-dir.
  CHECK(out.at("snapshot").get<std::string>().rfind(ws.cache.string(), 0) == 0);

  const auto messages = notify.wait_for("READY=1", std::chrono::seconds(10));
  INFO(messages);
  CHECK(messages.find("READY=1") != std::string::npos);

  // The activated daemon is the process that answers: its status pid is the activator's
  // pid (systemd-socket-activate execs it), and it counted our download.
  const auto status =
      run_kernelhub({"status", "--json"}, {{"KERNELHUB_SOCKET", ws.socket.string()}});
  REQUIRE(status.exit_code == 0);
  const auto s = json::parse(status.out);
  CHECK(s.at("pid") == activator.pid());
  CHECK(s.at("counters").at("misses").get<int>() >= 1);
}
