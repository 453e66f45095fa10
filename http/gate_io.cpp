#include "gate_io.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace kernelhub::http {
namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 417:
      return "Expectation Failed";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

std::string where(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

}  // namespace

SocketAddress socket_address(const sockaddr_storage& address) {
  SocketAddress out;
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    ::inet_ntop(AF_INET, &v4.sin_addr, text.data(), text.size());
    out.port = ntohs(v4.sin_port);
    out.loopback = (ntohl(v4.sin_addr.s_addr) >> 24) == 127;
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    out.port = ntohs(v6.sin6_port);
    if (IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) {
      in_addr v4{};
      std::memcpy(&v4, &v6.sin6_addr.s6_addr[12], sizeof v4);
      ::inet_ntop(AF_INET, &v4, text.data(), text.size());
      out.loopback = (ntohl(v4.s_addr) >> 24) == 127;
    } else {
      ::inet_ntop(AF_INET6, &v6.sin6_addr, text.data(), text.size());
      out.loopback = IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr) != 0;
    }
  }
  out.ip = text.data();
  return out;
}

Result<UniqueFd> listen_on(const std::string& host, int port, bool loopback_only) {
  const std::string name = loopback_only && host == "localhost" ? "127.0.0.1" : host;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | (loopback_only ? AI_NUMERICHOST : 0);
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc =
          ::getaddrinfo(name.empty() ? nullptr : name.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return fail(ErrorCode::network,
                "cannot listen on " + where(host, port) + ": " + ::gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  int last_errno = 0;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) {
      last_errno = errno;
      continue;
    }
    // SO_REUSEADDR only: SO_REUSEPORT (httplib's default) would let another process of our
    // uid bind the same port and take connections.
    const int on = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
      last_errno = errno;
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      last_errno = errno;
      continue;
    }
    const SocketAddress at = socket_address(bound);
    if (loopback_only && !at.loopback) {
      return fail(ErrorCode::invalid_argument,
                  "refusing to serve on " + where(at.ip, at.port) + " (from '" + host +
                      "'): not a loopback address; give 127.0.0.1 or ::1");
    }
    return fd;
  }
  return fail(ErrorCode::network, "cannot listen on " + where(host, port) + ": " +
                                      std::strerror(last_errno) +
                                      " (in use, or not an address of this host)");
}

std::string render_refusal(int status, std::string_view code, std::string_view message) {
  std::string one_line(message);
  std::replace_if(
      one_line.begin(), one_line.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  const std::string body = nlohmann::json{{"error", one_line}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  out += "Content-Type: application/json\r\n";
  out += "X-Error-Code: " + std::string(code) + "\r\n";
  out += "X-Error-Message: " + one_line + "\r\n";
  if (status == 503) out += "Retry-After: 1\r\n";
  out += "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  return out + body;
}

bool send_now(int fd, std::string_view bytes) {
  ssize_t n = 0;
  do {
    n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(bytes.size());
}

bool GateStream::wait_writable() const {
  pollfd p{fd_, POLLOUT, 0};
  int rc = 0;
  do {
    rc = ::poll(&p, 1, static_cast<int>(write_timeout_.count()));
  } while (rc < 0 && errno == EINTR);
  return rc > 0 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0;
}

bool GateStream::is_writable() const { return !failed_ && wait_writable(); }

ssize_t GateStream::read(char* ptr, size_t size) {
  const std::size_t n = std::min(size, request_.size());
  std::copy_n(request_.data(), n, ptr);
  request_.remove_prefix(n);
  return static_cast<ssize_t>(n);
}

ssize_t GateStream::write(const char* ptr, size_t size) {
  while (!failed_) {
    const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait_writable()) failed_ = true;
  }
  return -1;
}

void GateStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = peer_.ip;
  port = peer_.port;
}

void GateStream::get_local_ip_and_port(std::string& ip, int& port) const {
  ip = local_.ip;
  port = local_.port;
}

}  // namespace kernelhub::http
