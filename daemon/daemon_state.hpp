// Private to kh_daemon: the daemon's state (Daemon::Impl), shared by its lifecycle
// (daemon.cpp: start, step, finish) and its admission of connections (admission.cpp).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "connection.hpp"
#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/daemon/daemon.hpp"
#include "kernelhub/daemon/fetch_service.hpp"
#include "kernelhub/daemon/host_checks.hpp"
#include "kernelhub/daemon/local_hub.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::daemon {

// Refusals can come in floods (one user opening hundreds of sockets): say so at most this often.
inline constexpr auto kRefusalLogInterval = std::chrono::seconds(10);

struct Connection {
  std::mutex mutex;  // fd is closed by its thread, shut down by the stopping loop
  UniqueFd fd;
  PeerCredentials peer;
  std::thread thread;
  std::atomic<bool> done{false};
};

struct Daemon::Impl {
  DaemonOptions options;
  AtomicCounters counters;
  std::atomic<bool> stopping{false};
  std::atomic<bool> ready{false};
  UniqueFd wake_read, wake_write;
  std::mutex service_mutex;  // guards `service` being created/destroyed against reload_policy
  std::unique_ptr<FetchService> service;
  std::unique_ptr<ConnectionContext> context;
  std::unique_ptr<LocalHub> local_hub;  // --http
  std::atomic<int> http_port{0};
  std::list<std::unique_ptr<Connection>> connections;  // accept-loop thread only
  ReadBounds bounds;                                   // connection threads read these
  std::atomic<std::size_t> max_connections{0};
  std::atomic<std::size_t> max_per_uid{0};
  std::mutex uid_mutex;
  std::unordered_map<uid_t, std::size_t> per_uid;  // open connections of each uid but 0
  std::chrono::steady_clock::time_point last_refusal_log;
  // Set by start(): the listening socket (activated: handed over by systemd), the signals
  // (handle_signals), and the status last told to systemd.
  std::optional<UniqueFd> listener;
  bool activated = false;
  UniqueFd signals;
  DaemonCounters last_status;

  // The limits in force: flags over the policy's [daemon] keys over the defaults.
  void apply_limits(const trust::AdminPolicy& policy);
  // Takes a new client: refused while stopping or past the caps, else served on its thread.
  void admit(UniqueFd fd);
  void refuse(int fd, const PeerCredentials& peer, const std::string& why);
  // false: uid `uid` is at its cap. Root is exempt: containers without a user namespace all
  // connect as uid 0, and root can stop the daemon anyway.
  bool take_uid_slot(uid_t uid);
  void release_uid_slot(uid_t uid);
  // Joins the threads of finished connections (all: every connection).
  void reap(bool all);
  // Waits (in short sleeps: connection threads signal nothing else) until every connection
  // is done or `deadline` passes; true when all are done.
  bool wait_connections(std::chrono::steady_clock::time_point deadline) const;
  // Wakes a step() waiting in poll.
  void wake() const;
};

}  // namespace kernelhub::daemon
