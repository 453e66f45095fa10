// kernelhubd: one process per host owns the kernel cache and serves fetches over a Unix
// socket (docs/protocol.md). Each client is identified by SO_PEERCRED only; the admin policy
// decides who may connect and what a client's environment may opt into.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include "kernelhub/http/http_limits.hpp"
#include "kernelhub/proto/messages.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::daemon {

// Bounds that keep one local user from locking the others out (docs/operations.md, "Limits").
struct DaemonLimits {
  std::size_t max_connections = 256;         // all clients together
  std::size_t max_connections_per_uid = 32;  // one uid; uid 0 is exempt
  std::chrono::seconds idle_timeout{120};    // waiting for the next request
  std::chrono::seconds frame_timeout{10};    // hello; a request once its first byte is in
  std::size_t max_downloads = 8;             // flights running at once; more queue in order

  // `defaults`, overridden by the policy's [daemon] keys, overridden by `flags`.
  static DaemonLimits resolve(const DaemonLimits& defaults,
                              const trust::DaemonLimitSettings& policy,
                              const trust::DaemonLimitSettings& flags);
};

struct DaemonOptions {
  std::filesystem::path socket_path = "/run/kernelhub/kernelhub.sock";
  std::filesystem::path cache_dir = "/var/cache/kernelhub";
  std::optional<std::filesystem::path> policy_file;
  DaemonLimits limits;                     // built-in defaults
  trust::DaemonLimitSettings limit_flags;  // given on the command line: win over the policy
  std::chrono::seconds resolve_ttl{60};    // version/revision -> commit memo lifetime
  bool record_usage =
      true;  // false (--no-record-usage): no usage markers (the benchmark's baseline)
  std::chrono::seconds shutdown_grace{10};  // SIGTERM: in-flight work gets this long
  bool use_socket_activation = true;        // take fd 3 when sd_listen_fds(0) == 1
  bool handle_signals = false;              // step(): SIGTERM/SIGINT stop, SIGHUP reload
  util::Environment env;                    // HF_ENDPOINT, HF_TOKEN, HF_HUB_* for the Hub
  // --http HOST:PORT (loopback): the local Hub for Python clients and /metrics; off when empty.
  std::string http_listen;
  // Its bounds: heads, header deadline, connections in all and per client address.
  http::HttpListenerLimits http_limits;
};

// The counters `status` reports (docs/protocol.md).
using DaemonCounters = proto::Counters;

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // How a stop ended: clean, or with in-flight work abandoned past shutdown_grace (with
  // handle_signals the connection threads are left running: the process owner exits).
  enum class Finish { clean, abandoned };

  // Checks the cache root, loads the policy, starts the local Hub and listens (READY=1).
  Result<void> start();
  // One turn of the accept loop, on one thread: waits up to `timeout` for a client, a signal
  // (handle_signals: SIGTERM/SIGINT stop, SIGHUP reloads) or a stop request, and serves what
  // came. false once a stop was requested.
  bool step(std::chrono::milliseconds timeout);
  // Stops accepting and lets in-flight work finish, up to shutdown_grace.
  Finish finish();
  // start(), step() until request_stop(), finish(). Blocks.
  Result<Finish> run();
  // Thread-safe and async-signal-unsafe: call from a normal thread (step() does on SIGTERM).
  void request_stop();
  // Re-reads policy_file; on error the old policy stays in force (SIGHUP).
  Result<void> reload_policy();
  // True once the socket is listening (tests wait on this).
  bool ready() const;
  DaemonCounters counters() const;
  // The local Hub's port once ready() (0 without --http).
  int http_port() const;

 private:
  void take_signals();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kernelhub::daemon
