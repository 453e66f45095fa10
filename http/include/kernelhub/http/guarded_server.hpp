// An httplib::Server behind a gate of our own, for `kernelhub serve` and kernelhubd's --http
// local Hub. cpp-httplib 0.11 (Debian's shared library: its compile-time limits are fixed)
// holds a pool thread per connection while it reads a head, one byte at a time into a
// buffer without bound. Here one thread owns the listening socket and every connection:
// it polls them, reads each request head (and small body) into a bounded buffer under a
// deadline (HeadScanner, HttpListenerLimits), refuses what is over a bound, and only a
// whole request goes to a worker, which runs httplib's routing and writes the response.
// Keep-alive connections come back to the gate for their next head. No worker ever waits
// on a client's head, so one slow client cannot delay another.
//
// Routes, handlers and hooks are registered as on any httplib::Server; serve with bind()
// and serve() instead of bind_to_port()/listen_after_bind(). Plain HTTP only.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <memory>
#include <string>

#include "kernelhub/http/http_limits.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::http {

struct ListenerStats {
  std::uint64_t accepted = 0;         // connections taken in
  std::uint64_t refused_busy = 0;     // 503 at accept: over a connection cap
  std::uint64_t heads_refused = 0;    // 4xx/5xx from the gate: a head over a bound, malformed
  std::uint64_t heads_timed_out = 0;  // header deadline passed (408, or closed when idle)
  std::uint64_t requests = 0;         // handed to a worker
  std::uint64_t open = 0;             // connections open now (draining ones not counted)
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(HttpListenerLimits limits = {});
  // Call shutdown() and wait for serve() to return before destroying a server in use.
  ~GuardedServer() override;
  GuardedServer(const GuardedServer&) = delete;
  GuardedServer& operator=(const GuardedServer&) = delete;

  // Listens on host:port (0: a free port) and returns the port. loopback_only: `localhost`
  // is 127.0.0.1 and the address actually bound must be a loopback one.
  Result<int> bind(const std::string& host, int port, bool loopback_only = false);
  // Runs the gate on the calling thread, and the workers, until shutdown(); then waits for
  // the requests being answered and closes every connection.
  Result<void> serve();
  // From any thread, before or during serve().
  void shutdown();
  bool serving() const;
  // The address actually bound (numeric), e.g. "127.0.0.1".
  std::string bound_ip() const;
  ListenerStats stats() const;

 private:
  struct Gate;
  std::unique_ptr<Gate> gate_;
};

}  // namespace kernelhub::http
