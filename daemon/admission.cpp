// How kernelhubd takes a connection: the caps (all clients, per uid), the refusal, the
// connection's thread, and reaping finished ones; the limits in force.
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

#include "daemon_state.hpp"

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

}  // namespace

void Daemon::Impl::apply_limits(const trust::AdminPolicy& policy) {
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

void Daemon::Impl::refuse(int fd, const PeerCredentials& peer, const std::string& why) {
  spdlog::debug("refused uid {} (pid {}): {}", peer.uid, peer.pid, why);
  if (const auto now = std::chrono::steady_clock::now();
      now - last_refusal_log >= kRefusalLogInterval) {
    spdlog::warn("refusing connections: {}", why);
    last_refusal_log = now;
  }
  send_error(fd, counters, {ErrorCode::busy, why});
}

bool Daemon::Impl::take_uid_slot(uid_t uid) {
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

void Daemon::Impl::release_uid_slot(uid_t uid) {
  if (uid == 0) return;
  std::lock_guard lock(uid_mutex);
  if (const auto it = per_uid.find(uid); it != per_uid.end() && --it->second == 0)
    per_uid.erase(it);
}

void Daemon::Impl::reap(bool all) {
  for (auto it = connections.begin(); it != connections.end();) {
    if (all || (*it)->done.load()) {
      (*it)->thread.join();
      it = connections.erase(it);
    } else {
      ++it;
    }
  }
}

void Daemon::Impl::admit(UniqueFd fd) {
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

bool Daemon::Impl::wait_connections(std::chrono::steady_clock::time_point deadline) const {
  const auto all_done = [this] {
    return std::all_of(connections.begin(), connections.end(),
                       [](const auto& c) { return c->done.load(); });
  };
  while (!all_done() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return all_done();
}

void Daemon::Impl::wake() const {
  const char byte = 1;
  (void)!::write(wake_write.get(), &byte, 1);
}

}  // namespace kernelhub::daemon
