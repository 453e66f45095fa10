// Socket pieces of the guarded listener (guarded_server.cpp): the listening socket, client
// addresses, the gate's own refusals, and the httplib::Stream a worker answers a request
// over (the request from memory, the response to the socket with a write timeout).
#pragma once

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <string_view>

#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::http {

struct SocketAddress {
  std::string ip;  // numeric; an IPv4-mapped IPv6 address as plain IPv4
  int port = 0;
  bool loopback = false;
};

SocketAddress socket_address(const sockaddr_storage& address);

// A non-blocking listening socket on host:port (0: a free port). loopback_only: `localhost`
// means 127.0.0.1 (never the resolver: /etc/hosts may say otherwise), the host must be
// numeric, and the address actually bound must be loopback.
Result<UniqueFd> listen_on(const std::string& host, int port, bool loopback_only);

// A whole response from the gate itself (Connection: close), Hub-style: X-Error-Code,
// X-Error-Message and {"error": message}.
std::string render_refusal(int status, std::string_view code, std::string_view message);

// One send, never blocking, never SIGPIPE; whether every byte went.
bool send_now(int fd, std::string_view bytes);

// A worker's view of one connection: reads come from `request` (the gate has it whole),
// writes go to the non-blocking socket, each allowed `write_timeout` to make progress.
class GateStream final : public httplib::Stream {
 public:
  GateStream(int fd, std::string_view request, const SocketAddress& peer,
             const SocketAddress& local, std::chrono::milliseconds write_timeout)
      : fd_(fd), request_(request), peer_(peer), local_(local), write_timeout_(write_timeout) {}

  bool is_readable() const override { return !request_.empty(); }
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  // httplib 0.11 answers 500 to fds >= FD_SETSIZE, for its select(); nothing of ours
  // selects (the gate polls), and httplib uses the fd for nothing else.
  socket_t socket() const override { return -1; }

  bool failed() const { return failed_; }

 private:
  bool wait_writable() const;

  int fd_;
  std::string_view request_;
  const SocketAddress& peer_;
  const SocketAddress& local_;
  std::chrono::milliseconds write_timeout_;
  bool failed_ = false;
};

}  // namespace kernelhub::http
