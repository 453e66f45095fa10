#include "support/raw_http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <stdexcept>

namespace kernelhub::testing {
namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  return static_cast<int>(std::max<long>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
}

sockaddr_in loopback(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error("not an IPv4 address: " + ip);
  return a;
}

}  // namespace

std::string RawReply::header(std::string_view name) const {
  std::string lower_head = head;
  std::string want = "\r\n" + std::string(name) + ":";
  auto lower = [](std::string& s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  };
  lower(lower_head);
  lower(want);
  const auto at = lower_head.find(want);
  if (at == std::string::npos) return "";
  auto begin = at + want.size();
  while (begin < head.size() && head[begin] == ' ') ++begin;
  return head.substr(begin, head.find("\r\n", begin) - begin);
}

RawHttp::RawHttp(int port, const std::string& source)
    : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  if (!fd_) throw std::runtime_error("socket failed");
  const sockaddr_in from = loopback(source, 0);
  if (source != "127.0.0.1" &&
      ::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&from), sizeof from) != 0)
    throw std::runtime_error("cannot bind source address " + source);
  const sockaddr_in to = loopback("127.0.0.1", port);
  if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0)
    throw std::runtime_error("cannot connect to 127.0.0.1:" + std::to_string(port));
}

bool RawHttp::send(std::string_view bytes, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!bytes.empty()) {
    pollfd p{fd_.get(), POLLOUT, 0};
    if (::poll(&p, 1, ms_left(deadline)) <= 0 || (p.revents & (POLLERR | POLLHUP)) != 0)
      return false;
    const ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

RawReply RawHttp::read_reply(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  RawReply out;
  for (;;) {
    const auto end = in_.find("\r\n\r\n");
    if (end != std::string::npos) {
      out.head = in_.substr(0, end);
      const std::string length = out.header("Content-Length");
      const std::size_t body = length.empty() ? 0 : std::stoull(length);
      if (in_.size() >= end + 4 + body) {
        out.body = in_.substr(end + 4, body);
        if (out.head.starts_with("HTTP/1.1 ") && out.head.size() >= 12)
          out.status = std::stoi(out.head.substr(9, 3));
        in_.erase(0, end + 4 + body);
        if (out.status == 100) return read_reply(std::chrono::milliseconds(ms_left(deadline)));
        return out;
      }
    }
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, ms_left(deadline)) <= 0) return RawReply{};
    std::array<char, 65536> buf{};
    const ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n <= 0) return RawReply{};
    in_.append(buf.data(), static_cast<std::size_t>(n));
  }
}

bool RawHttp::closed_within(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, ms_left(deadline)) <= 0) return false;
    std::array<char, 65536> buf{};
    const ssize_t n = ::recv(fd_.get(), buf.data(), buf.size(), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
}

RawReply raw_get(int port, const std::string& path, std::chrono::milliseconds timeout,
                 const std::string& extra_headers) {
  RawHttp c(port);
  if (!c.send("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra_headers + "\r\n", timeout))
    return RawReply{};
  return c.read_reply(timeout);
}

}  // namespace kernelhub::testing
