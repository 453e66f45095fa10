// One client connection: peer check (SO_PEERCRED against the admin policy), the hello
// handshake, then requests one at a time until the client closes, breaks the framing, idles
// past the idle timeout or trickles a frame past the frame timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/daemon/fetch_service.hpp"
#include "kernelhub/daemon/host_checks.hpp"
#include "kernelhub_version.hpp"  // kDaemonName

namespace kernelhub::daemon {

// How long a connection may take, in milliseconds (a policy reload changes them while
// connections run). idle: from the end of one reply to the first byte of the next request;
// time spent serving a request (a download included) never counts. frame: for hello from
// connect, for a request from its first byte, until the whole frame is in.
struct ReadBounds {
  std::atomic<std::int64_t> idle_ms{120'000};
  std::atomic<std::int64_t> frame_ms{10'000};
};

struct ConnectionContext {
  FetchService& service;
  AtomicCounters& counters;
  std::string cache_root;
  std::chrono::steady_clock::time_point started;
  const std::atomic<bool>& stopping;
  const ReadBounds& bounds;
};

// Serves `socket_fd` (owned by the caller) until the conversation ends.
void serve_connection(int socket_fd, const PeerCredentials& peer, ConnectionContext& context);

// What `status` answers (and /metrics renders).
proto::StatusReply status_reply(const ConnectionContext& context, proto::RequestId id);

// Best effort: an error frame addressed to `id` (or to no request), counted in errors.
void send_error(int socket_fd, AtomicCounters& counters, const Error& error,
                std::optional<proto::RequestId> id = std::nullopt);

}  // namespace kernelhub::daemon
