// Daemon: start-up checks, the accept loop (one thread per connection, bounded), signals
// through a signalfd in the loop's poll set, sd_notify, and the graceful stop. Each part is a
// step a test can take: start(), step(), finish().
#include "kernelhub/daemon/daemon.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <mutex>
#include <thread>

#include "daemon_state.hpp"
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

// At the end of a stop's grace: how long connection threads get to tell their clients.
constexpr auto kTellWaitersTime = std::chrono::seconds(1);

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

  KH_TRY_ASSIGN(auto root_fd, open_cache_root(o.cache_dir));
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
    d.service = std::make_unique<FetchService>(o.cache_dir, std::move(root_fd), o.env,
                                               o.resolve_ttl, d.counters, o.record_usage);
    d.apply_limits(policy);
    d.service->set_policy(std::move(policy));
    d.service->start_cache_keeper();
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
  std::array<pollfd, 3> fds{{{d.listener->get(), POLLIN, 0},
                             {d.wake_read.get(), POLLIN, 0},
                             {d.signals ? d.signals.get() : -1, POLLIN, 0}}};
  const int n = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
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
