// A real Daemon on a temp socket, running in-process against the HubServer of a
// FetchFixture, and a small protocol client that speaks to it frame by frame.
// Catch2 assertions are not thread-safe: only the main thread asserts. Code that runs in
// other threads (the daemon's, a test's workers) returns results, errors included, and the
// main thread checks them (the try_* calls below never assert).
#pragma once

#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hub/fetch_fixture.hpp"
#include "kernelhub/daemon/daemon.hpp"
#include "kernelhub/proto/messages.hpp"
#include "kernelhub/proto/transport.hpp"

namespace kernelhub::testing {

inline const trust::RepoId kSageRepo{"SageAttention", "demo-fetch"};

class DaemonHarness {
 public:
  // `extra_env`: variables added to the daemon's environment (e.g. small slow-link limits).
  // `resolve_ttl`: how long the daemon reuses a version -> commit answer (0: asks each time).
  explicit DaemonHarness(std::optional<std::string> policy_toml = std::nullopt,
                         const std::map<std::string, std::string>& extra_env = {},
                         std::chrono::seconds resolve_ttl = std::chrono::seconds(60),
                         std::string http_listen = {});
  ~DaemonHarness();

  FetchFixture fx;
  std::filesystem::path socket;
  std::filesystem::path cache_dir;
  std::filesystem::path policy_file;
  std::unique_ptr<daemon::Daemon> daemon;

  void publish_sage();  // the same kernel under a publisher that needs opt-in
  // Publishes `source` into the fixture store as a commit of `repo` on `branch`.
  void publish(const trust::RepoId& repo, const std::string& branch,
               const std::filesystem::path& source, const std::string& message = "build");

 private:
  std::thread thread_;
  std::optional<std::string> run_error_;  // written by thread_, read after join()
};

struct Reply {
  nlohmann::json frame;  // the final frame (fetched, error, status, ...)
  std::vector<UniqueFd> fds;
  int progress_events = 0;
};

class TestClient {
 public:
  explicit TestClient(const std::filesystem::path& socket);  // asserts that it connected
  static Result<TestClient> connect(const std::filesystem::path& socket);
  nlohmann::json hello(int protocol = proto::kProtocolVersion,
                       std::vector<std::string> caps = {"fds", "progress"});
  // Sends `request` and reads frames until one that is not `progress`.
  Reply call(const nlohmann::json& request);
  // The same without assertions, for worker threads.
  Result<nlohmann::json> try_hello(int protocol = proto::kProtocolVersion,
                                   std::vector<std::string> caps = {"fds", "progress"});
  Result<Reply> try_call(const nlohmann::json& request);
  Result<std::optional<proto::ReceivedFrame>> read() {
    return reader_.read(std::chrono::seconds(10));
  }
  int fd() const { return fd_.get(); }
  void close() { fd_.reset(); }

 private:
  explicit TestClient(UniqueFd fd) : fd_(std::move(fd)), reader_(fd_.get()) {}
  UniqueFd fd_;
  proto::FrameReader reader_;
};

// A fetch of version 1 of `repo` for the fixture's CPU platform.
nlohmann::json fetch_request(const trust::RepoId& repo, std::uint64_t id,
                             std::map<std::string, std::string> env = {});
// `request` sent on a connection of its own, on a worker thread: the final frame and the
// seconds it took (no assertions off the main thread).
std::future<Result<std::pair<nlohmann::json, double>>> fetch_async(
    const std::filesystem::path& socket, nlohmann::json request);
std::string read_fd(int fd);
std::size_t open_fd_count();

}  // namespace kernelhub::testing
