// A real Daemon on a temp socket, running in-process against the HubServer of a
// FetchFixture, and a small protocol client that speaks to it frame by frame.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/daemon.hpp"
#include "proto/messages.hpp"
#include "proto/transport.hpp"
#include "tests/hub/fetch_fixture.hpp"

namespace kernelhub::testing {

inline const trust::RepoId kSageRepo{"SageAttention", "demo-fetch"};

class DaemonHarness {
 public:
  explicit DaemonHarness(std::optional<std::string> policy_toml = std::nullopt);
  ~DaemonHarness();

  FetchFixture fx;
  std::filesystem::path socket;
  std::filesystem::path cache_dir;
  std::filesystem::path policy_file;
  std::unique_ptr<daemon::Daemon> daemon;

  void publish_sage();  // the same kernel under a publisher that needs opt-in

 private:
  std::thread thread_;
};

struct Reply {
  nlohmann::json frame;  // the final frame (fetched, error, status, ...)
  std::vector<UniqueFd> fds;
  int progress_events = 0;
};

class TestClient {
 public:
  explicit TestClient(const std::filesystem::path& socket);
  nlohmann::json hello(int protocol = proto::kProtocolVersion,
                       std::vector<std::string> caps = {"fds", "progress"});
  // Sends `request` and reads frames until one that is not `progress`.
  Reply call(const nlohmann::json& request);
  Result<std::optional<proto::ReceivedFrame>> read() {
    return reader_.read(std::chrono::seconds(10));
  }
  int fd() const { return fd_.get(); }
  void close() { fd_.reset(); }

 private:
  UniqueFd fd_;
  proto::FrameReader reader_;
};

// A fetch of version 1 of `repo` for the fixture's CPU platform.
nlohmann::json fetch_request(const trust::RepoId& repo, std::uint64_t id,
                             std::map<std::string, std::string> env = {});
std::string read_fd(int fd);
std::size_t open_fd_count();

}  // namespace kernelhub::testing
