// send_frame and FrameReader: sendmsg/recvmsg with SCM_RIGHTS over a Unix stream socket.
#include "kernelhub/proto/transport.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "kernelhub/util/system_error.hpp"

namespace kernelhub::proto {
namespace {

using Clock = std::chrono::steady_clock;

Unexpected socket_error(const char* what, int err) {
  const bool gone = err == EPIPE || err == ECONNRESET || err == ENOTCONN;
  return fail(gone ? ErrorCode::network : ErrorCode::io,
              std::string(what) + ": " + util::errno_text(err));
}

// Waits for `events`; false on timeout. A negative timeout waits forever.
Result<bool> wait_for(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    int n = ::poll(&p, 1, timeout_ms);
    if (n >= 0) return n > 0;
    if (errno != EINTR) return socket_error("poll", errno);
  }
}

int remaining_ms(std::optional<Clock::time_point> deadline) {
  if (!deadline) return -1;
  auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

}  // namespace

Result<void> send_frame(int socket_fd, const nlohmann::json& message, std::span<const int> fds,
                        std::size_t max_frame) {
  if (fds.size() > kMaxFdsPerFrame)
    return fail(ErrorCode::invalid_argument,
                "at most " + std::to_string(kMaxFdsPerFrame) + " fds per frame");
  KH_TRY_ASSIGN(auto frame, encode_frame(message, max_frame));

  std::vector<char> control(fds.empty() ? 0 : CMSG_SPACE(sizeof(int) * fds.size()));
  std::size_t sent = 0;
  while (sent < frame.size()) {
    iovec iov{frame.data() + sent, frame.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (sent == 0 && !fds.empty()) {  // the fds ride with the frame's first byte
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
      cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n = ::sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        KH_TRY(wait_for(socket_fd, POLLOUT, -1));
        continue;
      }
      return socket_error("sendmsg", errno);
    }
    sent += static_cast<std::size_t>(n);
  }
  return ok();
}

FrameReader::FrameReader(int socket_fd, std::size_t max_frame)
    : fd_(socket_fd), decoder_(max_frame) {}

// One recvmsg of at most the bytes the current frame still needs. true: got bytes or EOF.
Result<bool> FrameReader::fill(std::optional<Clock::time_point> deadline) {
  std::size_t want = decoder_.bytes_needed();
  if (want == 0) want = 1;
  char data[64 * 1024];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerFrame)];
  for (;;) {
    iovec iov{data, std::min(want, sizeof data)};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        KH_TRY_ASSIGN(const bool ready, wait_for(fd_, POLLIN, remaining_ms(deadline)));
        if (!ready) return false;
        continue;
      }
      return socket_error("recvmsg", errno);
    }
    // Take ownership of every fd first, so nothing leaks whatever happens next.
    std::size_t received = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        pending_fds_.emplace_back(fd);
      }
      received += count;
    }
    if (msg.msg_flags & MSG_CTRUNC) {
      // Room was left for kMaxFdsPerFrame: a truncation short of it means the kernel could
      // not install the descriptors here, which is this process's open-file limit.
      if (received < kMaxFdsPerFrame) {
        return fail(ErrorCode::io, "descriptors sent with a frame were dropped on arrival: " +
                                       util::errno_text(EMFILE));
      }
      return fail(ErrorCode::protocol_error,
                  "peer sent more than " + std::to_string(kMaxFdsPerFrame) + " fds");
    }
    if (n == 0) eof_ = true;
    decoder_.feed(std::string_view(data, static_cast<std::size_t>(n)));
    return true;
  }
}

Result<std::optional<ReceivedFrame>> FrameReader::read(
    std::optional<std::chrono::milliseconds> timeout) {
  std::optional<Clock::time_point> deadline;
  if (timeout) deadline = Clock::now() + *timeout;
  for (;;) {
    auto next = decoder_.next();
    if (!next) {
      pending_fds_.clear();
      return fail(std::move(next).error());
    }
    if (*next) {
      ReceivedFrame frame{std::move(**next), {}};
      // Only `fetched` (daemon to client) and `import` (client to daemon) announce
      // descriptors; any others are closed here.
      const auto& type = frame.message["type"];
      if (type == "fetched" || type == "import") frame.fds = std::move(pending_fds_);
      pending_fds_.clear();
      return std::optional<ReceivedFrame>{std::move(frame)};
    }
    if (eof_) {
      pending_fds_.clear();
      if (decoder_.mid_frame())
        return fail(ErrorCode::truncated_frame, "connection closed inside a frame");
      return std::optional<ReceivedFrame>{};
    }
    KH_TRY_ASSIGN(const bool filled, fill(deadline));
    if (!filled)
      return fail(ErrorCode::timeout,
                  "no complete frame within " + std::to_string(timeout->count()) + " ms");
  }
}

}  // namespace kernelhub::proto
