// One client connection: peer check (SO_PEERCRED against the admin policy), the hello
// handshake, then requests one at a time until the client closes or breaks the framing.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "daemon/counters.hpp"
#include "daemon/fetch_service.hpp"
#include "kernelhub_version.hpp"  // kDaemonName

namespace kernelhub::daemon {

// A client must say hello within this long; afterwards it may idle as long as it likes.
inline constexpr std::chrono::seconds kHelloTimeout{10};

struct ConnectionContext {
  FetchService& service;
  AtomicCounters& counters;
  std::string cache_root;
  std::chrono::steady_clock::time_point started;
  const std::atomic<bool>& stopping;
};

// Serves `socket_fd` (owned by the caller) until the conversation ends.
void serve_connection(int socket_fd, ConnectionContext& context);

// Best effort: an error frame addressed to `id` (or to no request), counted in errors.
void send_error(int socket_fd, AtomicCounters& counters, const Error& error,
                std::optional<proto::RequestId> id = std::nullopt);

}  // namespace kernelhub::daemon
