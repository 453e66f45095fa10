// The gate: one thread polls the listener and every connection that is reading a head or
// draining; workers answer whole requests. Only the gate thread touches the connection
// table and the counts; a worker owns a connection from dispatch until it hands it back.
#include "kernelhub/http/guarded_server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gate_io.hpp"
#include "kernelhub/http/http_head.hpp"

namespace kernelhub::http {
namespace {

using Clock = std::chrono::steady_clock;

// After a refusal the gate reads (and drops) what the client still sends, for a while, so
// that closing does not reset the connection before the client has read the reply.
constexpr std::size_t kMaxDraining = 64;
constexpr std::chrono::milliseconds kDrainTime{1000};
constexpr std::size_t kDrainBytes = 4u << 20;           // loopback buffers hold megabytes
constexpr std::chrono::milliseconds kAcceptPause{100};  // out of fds: stop accepting a bit
constexpr int kAcceptBurst = 64;                        // accepts per wake-up

enum class Phase { head, queued, serving, draining };

struct Connection {
  Connection(UniqueFd f, SocketAddress p, SocketAddress l, const HttpHeadLimits& limits)
      : fd(std::move(f)), peer(std::move(p)), local(std::move(l)), scanner(limits) {}
  UniqueFd fd;
  SocketAddress peer;
  SocketAddress local;
  std::string in;       // received, not yet handed on (bounded by the head and body caps)
  std::string request;  // the request a worker answers: the head for httplib and the body
  HeadScanner scanner;
  Clock::time_point deadline;
  Phase phase = Phase::head;
  bool sent_continue = false;
  std::size_t drained = 0;
};

}  // namespace

struct GuardedServer::Gate {
  Gate(GuardedServer& s, HttpListenerLimits l) : owner(s), limits(l) {}
  GuardedServer& owner;
  HttpListenerLimits limits;
  UniqueFd listener;
  UniqueFd wake{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
  std::string ip;
  std::atomic<bool> stopping{false};
  std::atomic<bool> running{false};

  // Gate thread only.
  std::unordered_map<Connection*, std::unique_ptr<Connection>> conns;
  std::map<std::string, std::size_t> per_peer;
  std::size_t open = 0;
  std::size_t draining = 0;
  Clock::time_point accept_resumes{};
  Clock::time_point last_accept_warning{};

  // Shared with the workers.
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Connection*> ready;                       // whole requests, oldest first
  std::vector<std::pair<Connection*, bool>> returned;  // answered: (connection, keep open)
  bool workers_stop = false;

  std::atomic<std::uint64_t> accepted{0}, refused_busy{0}, heads_refused{0}, timed_out{0},
      requests{0}, open_now{0};

  void notify() const {
    const std::uint64_t one = 1;
    (void)!::write(wake.get(), &one, sizeof one);
  }

  void release_slot(Connection* c) {
    if (auto it = per_peer.find(c->peer.ip); it != per_peer.end()) {
      if (--it->second == 0) per_peer.erase(it);
      --open;
      open_now = open;
    }
  }

  void close(Connection* c) {
    if (c->phase == Phase::draining) {
      --draining;
    } else {
      release_slot(c);
    }
    conns.erase(c);
  }

  // The gate answers (a refusal), stops writing, and drains for a while before closing.
  void refuse(Connection* c, int status, const std::string& code, const std::string& message) {
    spdlog::debug("http {}:{}: {} {}", c->peer.ip, c->peer.port, status, message);
    (void)send_now(c->fd.get(), render_refusal(status, code, message));
    ::shutdown(c->fd.get(), SHUT_WR);
    if (draining >= kMaxDraining) return close(c);
    release_slot(c);  // a draining connection counts against no cap, only kMaxDraining
    c->phase = Phase::draining;
    c->deadline = Clock::now() + kDrainTime;
    c->drained = 0;
    ++draining;
  }

  // Looks at what a connection has buffered: refuses, waits for more, or hands it on.
  void advance(Connection* c) {
    switch (c->scanner.scan(c->in)) {
      case HeadScanner::State::incomplete:
        return;
      case HeadScanner::State::refused:
        ++heads_refused;
        return refuse(c, c->scanner.status(), c->scanner.error_code(), c->scanner.message());
      case HeadScanner::State::complete:
        break;
    }
    const std::size_t head = c->scanner.head_size();
    const std::size_t total = head + c->scanner.body_size();
    if (c->in.size() < total) {
      if (c->scanner.expect_continue() && !c->sent_continue) {
        c->sent_continue = true;
        if (!send_now(c->fd.get(), "HTTP/1.1 100 Continue\r\n\r\n")) return close(c);
      }
      return;
    }
    c->request = c->scanner.head_for_httplib(c->in);
    c->request.append(c->in, head, total - head);
    c->in.erase(0, total);
    c->phase = Phase::queued;
    ++requests;
    {
      std::lock_guard lock(mutex);
      ready.push_back(c);
    }
    cv.notify_one();
  }

  void on_readable(Connection* c) {
    std::array<char, 16384> buf{};
    if (c->phase == Phase::draining) {
      const ssize_t n = ::recv(c->fd.get(), buf.data(), buf.size(), 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      c->drained += n > 0 ? static_cast<std::size_t>(n) : 0;
      if (n <= 0 || c->drained > kDrainBytes) close(c);
      return;
    }
    // Room for the largest request we take, and no more.
    const std::size_t room =
        limits.head.max_head_bytes + limits.head.max_body_bytes + 1 - c->in.size();
    const ssize_t n = ::recv(c->fd.get(), buf.data(), std::min(buf.size(), room), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) return close(c);  // the client went away: nothing to answer
    c->in.append(buf.data(), static_cast<std::size_t>(n));
    advance(c);
  }

  void accept_some() {
    for (int i = 0; i < kAcceptBurst; ++i) {
      sockaddr_storage from{};
      socklen_t len = sizeof from;
      const int fd = ::accept4(listener.get(), reinterpret_cast<sockaddr*>(&from), &len,
                               SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          const auto now = Clock::now();
          if (now - last_accept_warning > std::chrono::seconds(10)) {  // one line, not ten a second
            spdlog::warn("http listener: accept: {}; pausing {} ms at a time", std::strerror(errno),
                         kAcceptPause.count());
            last_accept_warning = now;
          }
          accept_resumes = now + kAcceptPause;
        }
        return;
      }
      ++accepted;
      UniqueFd owned(fd);
      sockaddr_storage here{};
      socklen_t here_len = sizeof here;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&here), &here_len);
      const int on = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      auto c = std::make_unique<Connection>(std::move(owned), socket_address(from),
                                            socket_address(here), limits.head);
      Connection* raw = c.get();
      conns.emplace(raw, std::move(c));
      std::size_t& mine = per_peer[raw->peer.ip];
      ++mine;
      ++open;
      open_now = open;
      raw->deadline = Clock::now() + limits.header_timeout;
      if (open > limits.max_connections || mine > limits.max_connections_per_address) {
        ++refused_busy;
        refuse(raw, 503, "ServiceUnavailable",
               "too many connections (at most " + std::to_string(limits.max_connections) +
                   " in all and " + std::to_string(limits.max_connections_per_address) +
                   " from one address, here " + raw->peer.ip +
                   "): close idle connections or retry later");
      }
    }
  }

  void take_returned() {
    std::uint64_t count = 0;
    (void)!::read(wake.get(), &count, sizeof count);
    std::vector<std::pair<Connection*, bool>> back;
    {
      std::lock_guard lock(mutex);
      back.swap(returned);
    }
    for (const auto& [c, keep] : back) {
      c->request.clear();
      c->request.shrink_to_fit();
      if (!keep || stopping) {
        close(c);
        continue;
      }
      c->phase = Phase::head;
      c->scanner.reset();
      c->sent_continue = false;
      c->deadline = Clock::now() + limits.header_timeout;
      advance(c);  // a pipelined request may be buffered already
    }
  }

  void expire(Clock::time_point now) {
    std::vector<Connection*> late;
    for (const auto& [raw, c] : conns) {
      if ((c->phase == Phase::head || c->phase == Phase::draining) && c->deadline <= now)
        late.push_back(raw);
    }
    for (Connection* c : late) {
      if (c->phase == Phase::draining || c->in.empty()) {
        if (c->phase == Phase::head) ++timed_out;
        close(c);
      } else {
        ++timed_out;
        refuse(c, 408, "RequestTimeout",
               "request head not complete within " + std::to_string(limits.header_timeout.count()) +
                   " ms: send the whole request at once");
      }
    }
  }

  void poll_once() {
    const auto now = Clock::now();
    std::vector<pollfd> fds{{wake.get(), POLLIN, 0}};
    const bool accepting = now >= accept_resumes;
    if (accepting) fds.push_back({listener.get(), POLLIN, 0});
    std::vector<Connection*> who;
    auto next = accepting ? now + std::chrono::seconds(60) : accept_resumes;
    for (const auto& [raw, c] : conns) {
      if (c->phase != Phase::head && c->phase != Phase::draining) continue;
      fds.push_back({c->fd.get(), POLLIN, 0});
      who.push_back(raw);
      next = std::min(next, c->deadline);
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    const int rc = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long>(wait, 0)));
    if (rc < 0 && errno != EINTR) {
      spdlog::warn("http listener: poll: {}", std::strerror(errno));
      std::this_thread::sleep_for(kAcceptPause);
    }
    if (rc > 0) {
      if (fds[0].revents != 0) take_returned();
      const std::size_t first = accepting ? 2 : 1;
      for (std::size_t i = first; i < fds.size(); ++i) {
        if (fds[i].revents != 0 && conns.count(who[i - first]) != 0) on_readable(who[i - first]);
      }
      if (accepting && fds[1].revents != 0) accept_some();
    }
    expire(Clock::now());
  }

  void work() {
    for (;;) {
      Connection* c = nullptr;
      {
        std::unique_lock lock(mutex);
        cv.wait(lock, [this] { return workers_stop || !ready.empty(); });
        if (workers_stop) return;
        c = ready.front();
        ready.pop_front();
      }
      bool keep = false;
      try {
        GateStream stream(c->fd.get(), c->request, c->peer, c->local, limits.write_timeout);
        bool closed = false;
        const bool ok = owner.process_request(stream, stopping.load(), closed, nullptr);
        keep = ok && !closed && !stream.failed() && !stopping;
      } catch (const std::exception& e) {
        spdlog::warn("http {}:{}: {}", c->peer.ip, c->peer.port, e.what());
      }
      {
        std::lock_guard lock(mutex);
        returned.emplace_back(c, keep);
      }
      notify();
    }
  }
};

GuardedServer::GuardedServer(HttpListenerLimits limits)
    : gate_(std::make_unique<Gate>(*this, limits)) {
  // What httplib writes in Keep-Alive, and its own check of a body (the gate's is first).
  set_keep_alive_timeout(std::max<time_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(limits.header_timeout).count()));
  set_keep_alive_max_count(1'000'000);
  set_payload_max_length(limits.head.max_body_bytes);
}

GuardedServer::~GuardedServer() { shutdown(); }

Result<int> GuardedServer::bind(const std::string& host, int port, bool loopback_only) {
  if (gate_->listener) return fail(ErrorCode::internal, "the server is already bound");
  if (!gate_->wake) return fail(ErrorCode::io, std::string("eventfd: ") + std::strerror(errno));
  KH_TRY_ASSIGN(auto fd, listen_on(host, port, loopback_only));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  const SocketAddress at = socket_address(bound);
  gate_->ip = at.ip;
  gate_->listener = std::move(fd);
  // httplib's content providers stop writing once svr_sock_ is invalid (its "shutting down").
  svr_sock_ = gate_->listener.get();
  return at.port;
}

Result<void> GuardedServer::serve() {
  Gate& g = *gate_;
  if (!g.listener) return fail(ErrorCode::internal, "serve() before bind()");
  g.running = true;
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < std::max<std::size_t>(1, g.limits.workers); ++i)
    workers.emplace_back([&g] { g.work(); });
  while (!g.stopping) g.poll_once();
  g.listener.reset();
  {
    std::lock_guard lock(g.mutex);
    g.workers_stop = true;
  }
  g.cv.notify_all();
  for (auto& t : workers) t.join();
  g.ready.clear();
  g.returned.clear();
  g.conns.clear();
  g.per_peer.clear();
  g.open = g.draining = 0;
  g.open_now = 0;
  g.running = false;
  return ok();
}

void GuardedServer::shutdown() {
  svr_sock_ = INVALID_SOCKET;  // responses being streamed stop, as under httplib's stop()
  gate_->stopping = true;
  gate_->notify();
}

bool GuardedServer::serving() const { return gate_->running; }

std::string GuardedServer::bound_ip() const { return gate_->ip; }

ListenerStats GuardedServer::stats() const {
  const Gate& g = *gate_;
  return {g.accepted, g.refused_busy, g.heads_refused, g.timed_out, g.requests, g.open_now};
}

}  // namespace kernelhub::http
