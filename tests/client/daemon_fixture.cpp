#include "client/daemon_fixture.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace kernelhub::testing {

bool wait_for_listener(const std::filesystem::path& socket) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
    const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

DaemonFixture::DaemonFixture(const FixtureHub& hub)
    : DaemonFixture(hub, std::filesystem::path(), {}) {}

DaemonFixture::DaemonFixture(const FixtureHub& hub, std::filesystem::path cache,
                             const std::vector<std::string>& extra_args)
    : socket_(dir_.path() / "kernelhub.sock"),
      cache_(cache.empty() ? dir_.path() / "cache" : std::move(cache)) {
  std::filesystem::create_directories(cache_);
  std::vector<std::string> argv{kKernelhubd, "--socket", socket_.string(), "--cache-dir",
                                cache_.string()};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  daemon_ =
      std::make_unique<BackgroundProcess>(argv, EnvOverrides{{"HF_ENDPOINT", hub.endpoint()},
                                                             {"LISTEN_FDS", ""},
                                                             {"LISTEN_PID", ""},
                                                             {"KERNELHUB_POLICY", ""},
                                                             {"DIFFUSERS_TRUST_REMOTE_KERNELS", ""},
                                                             {"DIFFUSERS_DISABLE_REMOTE_CODE", ""},
                                                             {"HF_HUB_OFFLINE", ""}});
  if (!wait_for_listener(socket_))
    throw std::runtime_error("kernelhubd did not listen on " + socket_.string());
}

}  // namespace kernelhub::testing
