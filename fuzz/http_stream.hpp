// Shared by the HTTP-server fuzz harnesses: one fuzz input is one request, fed to a real
// cpp-httplib server through its Stream interface (no socket), the reply kept in a string.
#pragma once

#include <httplib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kernelhub::fuzzing {

// The request comes from the fuzz input; the response goes to a string.
class InputStream final : public httplib::Stream {
 public:
  explicit InputStream(std::string_view in) : in_(in) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return out.size() < (8u << 20); }
  ssize_t read(char* ptr, size_t size) override {
    const auto n = std::min(size, in_.size());
    std::copy_n(in_.data(), n, ptr);
    in_.remove_prefix(n);
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8080;
  }
  socket_t socket() const override { return -1; }

  std::string out;

 private:
  std::string_view in_;
};

// process_request is protected: the one entry point that takes a Stream.
class StreamServer final : public httplib::Server {
 public:
  bool serve(httplib::Stream& stream) {
    bool closed = false;
    return process_request(stream, /*close_connection=*/true, closed, [](httplib::Request&) {});
  }
};

// Serves the input as one request; traps on a malformed status line or a 500 (a server that
// is fine gives no internal error, whatever the request).
inline void serve_and_check(StreamServer& server, const std::uint8_t* data, std::size_t size) {
  InputStream stream(std::string_view(reinterpret_cast<const char*>(data), size));
  (void)server.serve(stream);
  const std::string& out = stream.out;
  if (!out.empty() && !out.starts_with("HTTP/1.1 ")) __builtin_trap();
  if (out.starts_with("HTTP/1.1 500")) __builtin_trap();
}

}  // namespace kernelhub::fuzzing
