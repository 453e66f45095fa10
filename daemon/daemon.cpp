// Daemon: start-up checks, the accept loop (one thread per connection, bounded), signals on
// a dedicated thread, sd_notify, and the graceful stop.
#include "daemon/daemon.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>

#include "cache/kernel_cache.hpp"
#include "daemon/connection.hpp"
#include "daemon/counters.hpp"
#include "daemon/fetch_service.hpp"
#include "daemon/host_checks.hpp"
#include "trust/policy.hpp"

namespace kernelhub::daemon {

namespace {

struct Connection {
  std::mutex mutex;  // fd is closed by its thread, shut down by the stopping loop
  UniqueFd fd;
  std::thread thread;
  std::atomic<bool> done{false};
};

std::string status_line(const DaemonCounters& c) {
  return "STATUS=" + std::to_string(c.active_connections) + " clients, " +
         std::to_string(c.requests) + " requests, " + std::to_string(c.hits) + " hits, " +
         std::to_string(c.misses) + " misses, " + std::to_string(c.errors) + " errors";
}

}  // namespace

struct Daemon::Impl {
  DaemonOptions options;
  AtomicCounters counters;
  std::atomic<bool> stopping{false};
  std::atomic<bool> ready{false};
  UniqueFd wake_read, wake_write;
  std::mutex service_mutex;  // guards `service` being created/destroyed against reload_policy
  std::unique_ptr<FetchService> service;
  std::unique_ptr<ConnectionContext> context;
  std::list<std::unique_ptr<Connection>> connections;  // accept-loop thread only

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
    if (counters.active_connections.load() >= options.max_connections) {
      send_error(fd.get(), counters,
                 {ErrorCode::shutting_down, "kernelhubd is at its connection limit (" +
                                                std::to_string(options.max_connections) +
                                                "); retry shortly"});
      return;
    }
    counters.active_connections.fetch_add(1);
    auto conn = std::make_unique<Connection>();
    conn->fd = std::move(fd);
    Connection* raw = conn.get();
    conn->thread = std::thread([this, raw] {
      serve_connection(raw->fd.get(), *context);
      {
        std::lock_guard lock(raw->mutex);
        raw->fd.reset();  // the client sees the close now, not when the thread is reaped
      }
      counters.active_connections.fetch_sub(1);
      raw->done.store(true);
    });
    connections.push_back(std::move(conn));
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
  impl_->reap(true);
  std::lock_guard lock(impl_->service_mutex);
  impl_->service.reset();  // joins download threads
}

bool Daemon::ready() const { return impl_->ready.load(); }
DaemonCounters Daemon::counters() const { return impl_->counters.snapshot(); }

void Daemon::request_stop() {
  impl_->stopping.store(true);
  impl_->wake();
}

Result<void> Daemon::reload_policy() {
  const auto& file = impl_->options.policy_file;
  if (!file) return ok();
  auto policy = trust::load_policy_file(*file);
  if (!policy) {
    spdlog::error("policy reload failed, keeping the previous policy: {}", policy.error().message);
    return fail(policy.error());
  }
  std::lock_guard lock(impl_->service_mutex);
  if (impl_->service) impl_->service->set_policy(std::move(*policy));
  spdlog::info("policy reloaded from {}", file->string());
  return ok();
}

Result<void> Daemon::run() {
  Impl& d = *impl_;
  const auto& o = d.options;
  if (!d.wake_read) return fail(ErrorCode::io, "cannot create the wake-up pipe");
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, sig);
  // Blocked before any thread starts, so only the signal thread ever takes them.
  if (o.handle_signals) ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto root_fd = open_cache_root(o.cache_dir);
  if (!root_fd) return fail(root_fd.error());
  trust::AdminPolicy policy;
  if (o.policy_file) {
    auto loaded = trust::load_policy_file(*o.policy_file);
    if (!loaded) return fail(loaded.error());
    policy = std::move(*loaded);
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
    d.service->set_policy(std::move(policy));
  }
  d.context = std::make_unique<ConnectionContext>(ConnectionContext{
      *d.service, d.counters, o.cache_dir.string(), std::chrono::steady_clock::now(), d.stopping});

  bool activated = false;
  auto listener = open_listener(o.socket_path, o.use_socket_activation, activated);
  if (!listener) return fail(listener.error());
  spdlog::info("kernelhubd listening on {} (cache {})",
               activated ? "the socket from systemd" : o.socket_path.string(),
               o.cache_dir.string());
  d.ready.store(true);
  ::sd_notify(0, ("READY=1\n" + status_line(d.counters.snapshot())).c_str());

  std::thread signal_thread;
  if (o.handle_signals) {
    signal_thread = std::thread([this, signals] {
      const timespec tick{0, 200'000'000};
      while (!impl_->stopping.load()) {
        const int sig = ::sigtimedwait(&signals, nullptr, &tick);
        if (sig == SIGHUP) {
          (void)reload_policy();
        } else if (sig == SIGTERM || sig == SIGINT) {
          spdlog::info("signal {}: stopping", sig);
          request_stop();
        }
      }
    });
  }

  DaemonCounters last_status = d.counters.snapshot();
  while (!d.stopping.load()) {
    pollfd fds[2] = {{listener->get(), POLLIN, 0}, {d.wake_read.get(), POLLIN, 0}};
    const int n = ::poll(fds, 2, 1000);
    d.reap(false);
    if (const auto now = d.counters.snapshot();
        !(now.requests == last_status.requests &&
          now.active_connections == last_status.active_connections &&
          now.errors == last_status.errors)) {
      ::sd_notify(0, status_line(now).c_str());
      last_status = now;
    }
    if (n <= 0 || (fds[0].revents & POLLIN) == 0) continue;
    UniqueFd client(::accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) {
      if (errno == EMFILE || errno == ENFILE)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    d.admit(std::move(client));
  }

  // Stop: no new connections; idle ones see end of stream, busy ones finish their request.
  ::sd_notify(0, "STOPPING=1\nSTATUS=stopping");
  listener->reset();
  if (!activated) ::unlink(o.socket_path.c_str());
  for (auto& conn : d.connections) {
    std::lock_guard lock(conn->mutex);
    if (conn->fd) ::shutdown(conn->fd.get(), SHUT_RD);
  }
  const auto deadline = std::chrono::steady_clock::now() + o.shutdown_grace;
  const bool downloads_done = d.service->wait_downloads(deadline);
  bool connections_done = false;
  while (!(connections_done = std::all_of(d.connections.begin(), d.connections.end(),
                                          [](const auto& c) { return c->done.load(); })) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (signal_thread.joinable()) signal_thread.join();
  if (!downloads_done || !connections_done) {
    spdlog::error(
        "in-flight work did not finish within {} s; exiting without it "
        "(nothing half-published; partial downloads are swept at the next start)",
        o.shutdown_grace.count());
    if (o.handle_signals) std::_Exit(0);  // we own the process: abandon the stuck threads
    for (auto& conn : d.connections) {
      std::lock_guard lock(conn->mutex);
      if (conn->fd) ::shutdown(conn->fd.get(), SHUT_RDWR);
    }
  }
  d.reap(true);
  spdlog::info("kernelhubd stopped");
  return ok();
}

}  // namespace kernelhub::daemon
