// Bounds of the guarded HTTP listener (guarded_server.hpp) that `kernelhub serve` and
// kernelhubd's --http local Hub run: what one request head may hold, how long it may take
// to arrive, and how many connections are served at once. Plain values, no httplib, so
// the daemon's options can carry them.
#pragma once

#include <chrono>
#include <cstddef>

namespace kernelhub::http {

// One request head (request line and header lines, up to the blank line) and its body.
// Line bounds count bytes without the CRLF; the defaults keep within httplib 0.11's own
// 8192 (which counts it), so httplib never refuses a head the gate passed.
struct HttpHeadLimits {
  std::size_t max_request_line = 8190;  // over: 414
  std::size_t max_header_line = 8190;   // one header line; over: 431
  std::size_t max_header_lines = 100;   // over: 431
  std::size_t max_head_bytes = 16384;   // the whole head with its CRLFs; over: 431
  std::size_t max_body_bytes = 16384;   // a Content-Length body; over: 413 (chunked: 411)
};

struct HttpListenerLimits {
  HttpHeadLimits head;
  // Open connections (reading a head, queued, being answered), all clients together and
  // from one client address. Over: 503 and close. On loopback every local client shares
  // 127.0.0.1, so the per-address cap only keeps one address from taking every slot; it is
  // the header deadline and the gate (no worker waits on a head) that keep a slow client
  // from delaying another.
  std::size_t max_connections = 256;
  std::size_t max_connections_per_address = 128;
  // A request head (and its body) must be whole this long after the connection is ready
  // for it: accepted, or the previous response sent. Nothing received by then: closed;
  // part of a head: 408 and closed.
  std::chrono::milliseconds header_timeout{10'000};
  // Each write of a response must make progress within this.
  std::chrono::milliseconds write_timeout{10'000};
  std::size_t workers = 32;  // threads answering whole requests
};

}  // namespace kernelhub::http
