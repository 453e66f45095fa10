// Moving frames over a Unix stream socket, with file descriptors as SCM_RIGHTS ancillary
// data (docs/protocol.md). Mechanics only: who may send what is the daemon's business.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelhub/proto/frame.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::proto {

inline constexpr std::size_t kMaxFdsPerFrame = 250;

// Encodes and writes one whole frame; `fds` ride on the sendmsg carrying the first byte.
// Retries EINTR and partial writes; MSG_NOSIGNAL, so a vanished peer is an error (network),
// never SIGPIPE. Blocking sockets are expected; EAGAIN is waited out with poll.
Result<void> send_frame(int socket_fd, const nlohmann::json& message, std::span<const int> fds = {},
                        std::size_t max_frame = kDefaultMaxFrame);

struct ReceivedFrame {
  nlohmann::json message;
  std::vector<UniqueFd> fds;  // owned; in the order the sender passed them
};

// Reads frames off one socket; it does not own the socket.
class FrameReader {
 public:
  explicit FrameReader(int socket_fd, std::size_t max_frame = kDefaultMaxFrame);

  // The next frame with the fds that arrived with its bytes. nullopt: clean end of stream
  // between frames. truncated_frame: end of stream inside a frame. timeout: nothing whole
  // arrived within `timeout` (from the call). Decoder errors as in FrameDecoder::next().
  Result<std::optional<ReceivedFrame>> read(std::optional<std::chrono::milliseconds> timeout = {});

 private:
  Result<bool> fill(std::optional<std::chrono::steady_clock::time_point> deadline);

  int fd_;
  FrameDecoder decoder_;
  std::vector<UniqueFd> pending_fds_;  // received, not yet attached to a returned frame
  bool eof_ = false;
};

// A connected SOCK_STREAM|SOCK_CLOEXEC Unix socket. network when nobody listens (ENOENT,
// ECONNREFUSED), invalid_argument when the path does not fit sun_path.
Result<UniqueFd> connect_unix(const std::filesystem::path& path);
// Binds and listens. A stale socket file at `path` is unlinked first; any other kind of file
// there is left alone and reported (io), so a typo never deletes a regular file.
Result<UniqueFd> listen_unix(const std::filesystem::path& path, int backlog);

}  // namespace kernelhub::proto
