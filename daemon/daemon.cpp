// Daemon: start-up checks, the accept loop (one thread per connection, bounded), signals
// through a signalfd in the loop's poll set, sd_notify, and the graceful stop. Each part is a
// step a test can take: start(), step(), finish().
#include "kernelhub/daemon/daemon.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "connection.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/daemon/fetch_service.hpp"
#include "kernelhub/daemon/host_checks.hpp"
#include "kernelhub/daemon/local_hub.hpp"
#include "kernelhub/hub/signature_gate.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/system_error.hpp"

namespace kernelhub::daemon {

namespace {

// Closing a Unix socket with unread bytes makes the peer's next read fail with ECONNRESET,
// which can hide the error frame we just sent (a half-sent request cut off by the frame
// bound). Discard what is already queued, bounded, so the client reads our reply, then EOF.
void discard_unread(int fd) {
  std::array<char, 4096> sink{};
  for (int i = 0; i < 64; ++i) {
    if (::recv(fd, sink.data(), sink.size(), MSG_DONTWAIT) <= 0) return;
  }
}

struct Connection {
  std::mutex mutex;  // fd is closed by its thread, shut down by the stopping loop
  UniqueFd fd;
  PeerCredentials peer;
  std::thread thread;
  std::atomic<bool> done{false};
};

// At the end of a stop's grace: how long connection threads get to tell their clients.
constexpr auto kTellWaitersTime = std::chrono::seconds(1);

// Refusals can come in floods (one user opening hundreds of sockets): say so at most this often.
constexpr auto kRefusalLogInterval = std::chrono::seconds(10);

std::string status_line(const DaemonCounters& c) {
  return "STATUS=" + std::to_string(c.active_connections) + " clients, " +
         std::to_string(c.requests) + " requests, " + std::to_string(c.hits) + " hits, " +
         std::to_string(c.misses) + " misses, " + std::to_string(c.errors) + " errors";
}

}  // namespace

DaemonLimits DaemonLimits::resolve(const DaemonLimits& defaults,
                                   const trust::DaemonLimitSettings& policy,
                                   const trust::DaemonLimitSettings& flags) {
  DaemonLimits out = defaults;
  for (const auto* s : {&policy, &flags}) {
    if (s->max_connections) out.max_connections = *s->max_connections;
    if (s->max_connections_per_uid) out.max_connections_per_uid = *s->max_connections_per_uid;
    if (s->idle_timeout_s) out.idle_timeout = std::chrono::seconds(*s->idle_timeout_s);
    if (s->frame_timeout_s) out.frame_timeout = std::chrono::seconds(*s->frame_timeout_s);
    if (s->max_downloads) out.max_downloads = *s->max_downloads;
  }
  return out;
}

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
  void apply_limits(const trust::AdminPolicy& policy) {
    const auto l = DaemonLimits::resolve(options.limits, policy.limits, options.limit_flags);
    max_connections.store(l.max_connections);
    max_per_uid.store(l.max_connections_per_uid);
    bounds.idle_ms.store(std::chrono::milliseconds(l.idle_timeout).count());
    bounds.frame_ms.store(std::chrono::milliseconds(l.frame_timeout).count());
    if (service) service->set_max_downloads(l.max_downloads);
    if (l.max_connections_per_uid >= l.max_connections)
      spdlog::warn(
          "max_connections_per_uid ({}) is not below max_connections ({}): one user can "
          "lock the others out",
          l.max_connections_per_uid, l.max_connections);
    spdlog::info("limits: {} connections, {} per uid, idle {} s, frame {} s, {} downloads at once",
                 l.max_connections, l.max_connections_per_uid, l.idle_timeout.count(),
                 l.frame_timeout.count(), l.max_downloads);
  }

  void refuse(int fd, const PeerCredentials& peer, const std::string& why) {
    spdlog::debug("refused uid {} (pid {}): {}", peer.uid, peer.pid, why);
    if (const auto now = std::chrono::steady_clock::now();
        now - last_refusal_log >= kRefusalLogInterval) {
      spdlog::warn("refusing connections: {}", why);
      last_refusal_log = now;
    }
    send_error(fd, counters, {ErrorCode::busy, why});
  }

  // false: uid `uid` is at its cap. Root is exempt: containers without a user namespace all
  // connect as uid 0, and root can stop the daemon anyway.
  bool take_uid_slot(uid_t uid) {
    if (uid == 0) return true;
    std::lock_guard lock(uid_mutex);
    auto& open = per_uid[uid];
    if (open >= max_per_uid.load()) {
      if (open == 0) per_uid.erase(uid);
      return false;
    }
    ++open;
    return true;
  }
  void release_uid_slot(uid_t uid) {
    if (uid == 0) return;
    std::lock_guard lock(uid_mutex);
    if (const auto it = per_uid.find(uid); it != per_uid.end() && --it->second == 0)
      per_uid.erase(it);
  }

  void reap(bool all) {
    for (auto it = connections.begin(); it != connections.end();) {
      if (all || (*it)->done.load()) {
        (*it)->thread.join();
        it = connections.erase(it);
      } else {
        ++it;
      }
    }
  }

  void admit(UniqueFd fd) {
    counters.connections.fetch_add(1, std::memory_order_relaxed);
    if (stopping.load()) {
      send_error(fd.get(), counters,
                 {ErrorCode::shutting_down, "kernelhubd is stopping; retry shortly"});
      return;
    }
    // From the kernel, before a byte is read: the per-uid cap holds even before hello.
    auto peer = peer_credentials(fd.get());
    if (!peer) {
      spdlog::warn("dropping a connection: {}", peer.error().message);
      return;
    }
    if (const auto cap = max_connections.load(); counters.active_connections.load() >= cap) {
      refuse(fd.get(), *peer,
             "kernelhubd serves at most " + std::to_string(cap) +
                 " connections at once, all users together; retry shortly, or ask the admin to "
                 "raise [daemon] max_connections (kernelhubd --max-connections)");
      return;
    }
    if (!take_uid_slot(peer->uid)) {
      refuse(fd.get(), *peer,
             "uid " + std::to_string(peer->uid) + " already has " +
                 std::to_string(max_per_uid.load()) +
                 " connections open to kernelhubd, its per-user limit; close idle clients, or "
                 "ask the admin to raise [daemon] max_connections_per_uid (kernelhubd "
                 "--max-connections-per-uid)");
      return;
    }
    counters.active_connections.fetch_add(1);
    auto conn = std::make_unique<Connection>();
    conn->fd = std::move(fd);
    conn->peer = std::move(*peer);
    Connection* raw = conn.get();
    conn->thread = std::thread([this, raw] {
      serve_connection(raw->fd.get(), raw->peer, *context);
      {
        std::lock_guard lock(raw->mutex);
        discard_unread(raw->fd.get());
        raw->fd.reset();  // the client sees the close now, not when the thread is reaped
      }
      release_uid_slot(raw->peer.uid);
      counters.active_connections.fetch_sub(1);
      raw->done.store(true);
    });
    connections.push_back(std::move(conn));
  }

  // Waits (in short sleeps: connection threads signal nothing else) until every connection
  // is done or `deadline` passes; true when all are done.
  bool wait_connections(std::chrono::steady_clock::time_point deadline) const {
    const auto all_done = [this] {
      return std::all_of(connections.begin(), connections.end(),
                         [](const auto& c) { return c->done.load(); });
    };
    while (!all_done() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return all_done();
  }

  void wake() const {
    const char byte = 1;
    (void)!::write(wake_write.get(), &byte, 1);
  }
};

Daemon::Daemon(DaemonOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  // Clients get snapshot paths under the root: they must not depend on our cwd.
  std::error_code ec;
  if (auto absolute = std::filesystem::absolute(impl_->options.cache_dir, ec); !ec)
    impl_->options.cache_dir = absolute;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    impl_->wake_read.reset(fds[0]);
    impl_->wake_write.reset(fds[1]);
  }
}

Daemon::~Daemon() {
  impl_->local_hub.reset();  // uses the service
  impl_->reap(true);
  std::lock_guard lock(impl_->service_mutex);
  impl_->service.reset();  // joins download threads
}

bool Daemon::ready() const { return impl_->ready.load(); }
DaemonCounters Daemon::counters() const { return impl_->counters.snapshot(); }
int Daemon::http_port() const { return impl_->http_port.load(); }

void Daemon::request_stop() {
  impl_->stopping.store(true);
  impl_->wake();
}

Result<void> Daemon::reload_policy() {
  const auto& file = impl_->options.policy_file;
  if (!file) return ok();
  auto policy = hub::load_checked_policy(*file);  // a bad one keeps the policy in force
  if (!policy) {
    spdlog::error("policy reload failed, keeping the previous policy: {}", policy.error().message);
    return fail(policy.error());
  }
  std::lock_guard lock(impl_->service_mutex);
  impl_->apply_limits(*policy);
  if (impl_->service) impl_->service->set_policy(std::move(*policy));
  spdlog::info("policy reloaded from {}", file->string());
  return ok();
}

Result<void> Daemon::start() {
  Impl& d = *impl_;
  const auto& o = d.options;
  if (d.listener) return fail(ErrorCode::internal, "kernelhubd already started");
  if (!d.wake_read) return fail(ErrorCode::io, "cannot create the wake-up pipe");
  if (o.handle_signals) {
    // Blocked before any thread starts, so they reach only the signalfd that step() polls.
    sigset_t signals;
    sigemptyset(&signals);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, sig);
    ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    d.signals.reset(::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!d.signals)
      return fail(ErrorCode::io, "cannot create a signalfd: " + util::errno_text(errno));
  }

  auto root_fd = open_cache_root(o.cache_dir);
  if (!root_fd) return fail(root_fd.error());
  trust::AdminPolicy policy;
  if (o.policy_file) {
    KH_TRY_ASSIGN(policy, hub::load_checked_policy(*o.policy_file));
  }
  // One daemon per cache: the holder of this lock may sweep every temp at start-up.
  cache::KernelCache cache(o.cache_dir);
  const auto instance_lock = cache.try_lock_instance();
  const bool sole = instance_lock.has_value();
  if (!sole)
    spdlog::warn("another kernelhubd uses {}; only old partial downloads are swept",
                 o.cache_dir.string());
  if (const auto swept =
          cache.sweep_stale_temps(sole ? std::chrono::seconds(0) : std::chrono::hours(1));
      swept > 0) {
    spdlog::info("removed {} partial download(s) left by an earlier run", swept);
  }
  {
    std::lock_guard lock(d.service_mutex);
    d.service = std::make_unique<FetchService>(o.cache_dir, std::move(*root_fd), o.env,
                                               o.resolve_ttl, d.counters);
    d.apply_limits(policy);
    d.service->set_policy(std::move(policy));
  }
  d.context = std::make_unique<ConnectionContext>(
      ConnectionContext{*d.service, d.counters, o.cache_dir.string(),
                        std::chrono::steady_clock::now(), d.stopping, d.bounds});

  if (!o.http_listen.empty()) {
    KH_TRY_ASSIGN(auto http, parse_http_listen(o.http_listen));
    http.resolve_ttl = o.resolve_ttl;
    http.env = o.env;
    http.limits = o.http_limits;
    d.local_hub = std::make_unique<LocalHub>(std::move(http), *d.service, d.counters,
                                             [&d] { return status_reply(*d.context, 0); });
    KH_TRY(d.local_hub->start());
    d.http_port.store(d.local_hub->port());
  }

  KH_TRY_ASSIGN(auto listener, open_listener(o.socket_path, o.use_socket_activation, d.activated));
  d.listener = std::move(listener);
  spdlog::info("kernelhubd listening on {} (cache {})",
               d.activated ? "the socket from systemd" : o.socket_path.string(),
               o.cache_dir.string());
  d.ready.store(true);
  d.last_status = d.counters.snapshot();
  ::sd_notify(0, ("READY=1\n" + status_line(d.last_status)).c_str());
  return ok();
}

bool Daemon::step(std::chrono::milliseconds timeout) {
  Impl& d = *impl_;
  if (!d.listener || d.stopping.load()) return false;
  pollfd fds[3] = {{d.listener->get(), POLLIN, 0},
                   {d.wake_read.get(), POLLIN, 0},
                   {d.signals ? d.signals.get() : -1, POLLIN, 0}};
  const int n = ::poll(fds, 3, static_cast<int>(timeout.count()));
  d.reap(false);
  if (const auto now = d.counters.snapshot();
      !(now.requests == d.last_status.requests &&
        now.active_connections == d.last_status.active_connections &&
        now.errors == d.last_status.errors)) {
    ::sd_notify(0, status_line(now).c_str());
    d.last_status = now;
  }
  if (n > 0 && (fds[2].revents & POLLIN) != 0) take_signals();
  if (n <= 0 || (fds[0].revents & POLLIN) == 0 || d.stopping.load()) return !d.stopping.load();
  UniqueFd client(::accept4(d.listener->get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!client) {
    if (const int err = errno; err == EMFILE || err == ENFILE) {
      if (const auto now = std::chrono::steady_clock::now();
          now - d.last_refusal_log >= kRefusalLogInterval) {
        spdlog::warn("cannot accept connections: {}", util::errno_text(err));
        d.last_refusal_log = now;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // until a descriptor frees
    }
    return true;
  }
  d.admit(std::move(client));
  return true;
}

void Daemon::take_signals() {
  signalfd_siginfo info{};
  while (::read(impl_->signals.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    const auto sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGHUP) {
      (void)reload_policy();
    } else if (sig == SIGTERM || sig == SIGINT) {
      spdlog::info("signal {}: stopping", sig);
      request_stop();
    }
  }
}

Daemon::Finish Daemon::finish() {
  Impl& d = *impl_;
  const auto& o = d.options;
  if (!d.listener) return Finish::clean;
  // Stop: no new connections; idle ones see end of stream, busy ones finish their request.
  d.stopping.store(true);
  ::sd_notify(0, "STOPPING=1\nSTATUS=stopping");
  d.listener.reset();
  if (d.local_hub) d.local_hub->stop();  // lets requests in progress finish
  if (!d.activated) ::unlink(o.socket_path.c_str());
  for (auto& conn : d.connections) {
    std::lock_guard lock(conn->mutex);
    if (conn->fd) ::shutdown(conn->fd.get(), SHUT_RD);
  }
  const auto deadline = std::chrono::steady_clock::now() + o.shutdown_grace;
  d.service->stop_queued();  // downloads still waiting for a slot never start
  const bool downloads_done = d.service->wait_downloads(deadline);
  const bool connections_done = d.wait_connections(deadline);
  if (downloads_done && connections_done) {
    d.reap(true);
    spdlog::info("kernelhubd stopped");
    return Finish::clean;
  }
  spdlog::error(
      "in-flight work did not finish within {} s; exiting without it "
      "(nothing half-published; partial downloads are swept at the next start)",
      o.shutdown_grace.count());
  // The clients still waiting hear why, before their connections close (a moment for their
  // threads to send it).
  d.service->abandon_waiters();
  d.wait_connections(std::chrono::steady_clock::now() + kTellWaitersTime);
  if (o.handle_signals) return Finish::abandoned;  // the process owner exits without them
  for (auto& conn : d.connections) {
    std::lock_guard lock(conn->mutex);
    if (conn->fd) ::shutdown(conn->fd.get(), SHUT_RDWR);
  }
  d.reap(true);
  spdlog::info("kernelhubd stopped");
  return Finish::clean;
}

Result<Daemon::Finish> Daemon::run() {
  KH_TRY(start());
  while (step(std::chrono::seconds(1))) {
  }
  return finish();
}

}  // namespace kernelhub::daemon
