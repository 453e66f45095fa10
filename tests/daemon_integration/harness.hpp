// The pieces every daemon integration test uses: a kernelhubd child we can SIGKILL, restart
// on the same cache or run under a wrapper (strace, systemd-socket-activate); a raw protocol
// client; checks that a hand-out and a cache are consistent.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "e2e/e2e_support.hpp"
#include "kernelhub/proto/transport.hpp"
#include "support/process.hpp"

namespace kernelhub::testing {

inline const std::string kKernelhubd = std::string(KH_BIN_DIR) + "/kernelhubd";
inline const std::string kProbe = std::string(KH_BIN_DIR) + "/kh_daemon_probe";

// A child whose lifetime the test controls: killed with SIGKILL (if still running) and
// reaped on destruction; output goes to `log`.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const EnvOverrides& env,
        const std::filesystem::path& log);
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();
  pid_t pid() const { return pid_; }
  void signal(int sig) const;
  // The wait status once it exits within `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  bool running();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

struct DaemonConfig {
  std::filesystem::path socket;
  std::filesystem::path cache;
  std::string hf_endpoint;
  std::optional<std::filesystem::path> policy;
  std::vector<std::string> wrapper;  // prepended to the kernelhubd command line
  std::vector<std::string> extra_args;
  EnvOverrides env;
  std::filesystem::path log;
};

// kernelhubd (possibly under a wrapper) on a socket and cache of the test's choosing.
class DaemonProcess {
 public:
  explicit DaemonProcess(DaemonConfig config, bool wait_ready = true);
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;
  // Stops a daemon that is still running (see stop), then the child goes as Child does.
  ~DaemonProcess();
  // SIGTERM to kernelhubd itself (under strace, signalling strace would only detach it) and
  // wait for the child to exit; returns its wait status.
  int stop();
  Child& child() { return *child_; }
  const DaemonConfig& config() const { return config_; }
  std::string log() const;

 private:
  DaemonConfig config_;
  std::unique_ptr<Child> child_;
};

// True once something accepts connections on `socket` (bind and listen are two steps).
bool wait_for_listener(const std::filesystem::path& socket,
                       std::chrono::milliseconds timeout = std::chrono::seconds(20));

// True once `path` exists (any kind of file).
bool wait_for_path(const std::filesystem::path& path,
                   std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A protocol client with no policy of its own: for raw bytes and frames the real client
// library would never send.
class WireClient {
 public:
  explicit WireClient(const std::filesystem::path& socket);
  int fd() const { return fd_.get(); }
  // hello with `capabilities`; returns the daemon's first frame (hello or error).
  nlohmann::json hello(const std::vector<std::string>& capabilities = {"fds"});
  void send(const nlohmann::json& frame);
  void send_raw(std::string_view bytes);
  // The next frame; nullopt on a clean close; throws on timeout.
  std::optional<proto::ReceivedFrame> read(
      std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // True when the daemon closed the connection (EOF, or a reset if bytes of ours were still
  // unread) within `timeout`; false when a frame arrived instead.
  bool hung_up(std::chrono::milliseconds timeout);
  // Sends fetch of kVariant (plus `extra` members) without waiting; returns its id.
  std::uint64_t send_fetch(const std::string& repo, int version,
                           const nlohmann::json& env = nlohmann::json::object(),
                           const nlohmann::json& extra = nlohmann::json::object());
  // Sends fetch (plus `extra` members) and returns its final frame (fetched or error).
  proto::ReceivedFrame fetch(const std::string& repo, int version,
                             const nlohmann::json& env = nlohmann::json::object(),
                             const nlohmann::json& extra = nlohmann::json::object());
  // status request -> status frame
  nlohmann::json status();
  void close() { fd_.reset(); }

 private:
  UniqueFd fd_;
  std::optional<proto::FrameReader> reader_;
  std::uint64_t next_id_ = 1;
};

// Waits (up to 10 s) until the Hub has seen a GET whose path contains `part`: an upstream
// download is under way. Returns whether it happened.
bool wait_for_upstream_get(const FixtureHub& hub, const std::string& part);

// The daemon's pid as its status reply says (under a wrapper it differs from the child's).
pid_t daemon_pid(const std::filesystem::path& socket);

// Problems with a `fetched` frame and its fds: each file's bytes read through its fd must
// match the manifest (size, sha256) and, when given, `expected` (path -> sha256); each fd
// must be read-only. Empty when all is well.
std::vector<std::string> check_handout(const proto::ReceivedFrame& fetched,
                                       const std::map<std::string, std::string>& expected = {});

// Problems with a cache after a crash: a blob whose bytes do not hash to its name, a
// snapshot link to a missing blob, a ref to a snapshot that is missing any of `expected`'s
// files (repo-relative path -> sha256), or leftover temps (*.incomplete, *.tmp).
std::vector<std::string> check_cache(const std::filesystem::path& cache_root,
                                     const std::string& repo_folder,
                                     const std::map<std::string, std::string>& expected);

// Open file descriptors of a process (/proc/PID/fd).
std::size_t fd_count(pid_t pid);
// VmRSS of a process in kB.
std::size_t rss_kb(pid_t pid);

// Changes the fault plan of a running `kernelhub-test-hub --test-endpoints`.
void set_hub_faults(const FixtureHub& hub, const nlohmann::json& plan);

}  // namespace kernelhub::testing
