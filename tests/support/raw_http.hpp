// A raw HTTP/1.1 client for tests of listeners (the guarded gate, kernelhubd --http): a
// loopback TCP connection, optionally from another 127.x source address, bytes sent as
// given (unfinished heads, drips), replies parsed by hand. Never asserts: it throws on a
// setup failure and returns what it saw, so worker threads can use it too.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::testing {

struct RawReply {
  int status = 0;    // 0: no whole reply in time (or the connection closed first)
  std::string head;  // status line and headers
  std::string body;  // Content-Length bytes
  std::string header(std::string_view name) const;  // first value, case-insensitive name
};

class RawHttp {
 public:
  // Connects to 127.0.0.1:port from `source` (any 127.x address); throws on failure.
  explicit RawHttp(int port, const std::string& source = "127.0.0.1");
  // One send of all `bytes`, waiting at most `timeout`; false once the peer closed or reset.
  bool send(std::string_view bytes,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));
  // The next whole reply within `timeout`.
  RawReply read_reply(std::chrono::milliseconds timeout);
  // True when the peer closes (EOF or reset) within `timeout`; bytes that arrive are dropped.
  bool closed_within(std::chrono::milliseconds timeout);
  int fd() const { return fd_.get(); }
  void close() { fd_.reset(); }

 private:
  UniqueFd fd_;
  std::string in_;
};

// One GET on a fresh connection; the reply (status 0 if none came within `timeout`).
RawReply raw_get(int port, const std::string& path, std::chrono::milliseconds timeout,
                 const std::string& extra_headers = "");

}  // namespace kernelhub::testing
