// libFuzzer harness: the guarded listener's HeadScanner (http/http_head.cpp), which
// reads every HTTP request head from a client before cpp-httplib sees it, for `kernelhub
// serve` and kernelhubd --http. The first byte picks the limits (the defaults, or small ones
// so that every bound is reached) and how the rest is split into arrivals. Properties:
//   - the verdict (state, status, sizes, the head httplib gets) is the same whole and split;
//   - a head it accepts is within every bound, recounted here independently;
//   - what httplib gets holds no Expect, no REMOTE_ADDR-style name, at most one Range and
//     only an acceptable one;
//   - with the default limits, httplib answers that head without 414, 416, 431 or 500.
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http_stream.hpp"
#include "kernelhub/http/http_head.hpp"
#include "kernelhub/http/http_replies.hpp"

using kernelhub::http::acceptable_range;
using kernelhub::http::HeadScanner;
using kernelhub::http::HttpHeadLimits;

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

HttpHeadLimits small_limits() {
  HttpHeadLimits l;
  l.max_request_line = 64;
  l.max_header_line = 48;
  l.max_header_lines = 6;
  l.max_head_bytes = 256;
  l.max_body_bytes = 32;
  return l;
}

// Recounts an accepted head line by line and checks what httplib will get.
void check_accepted(const HeadScanner& scanner, std::string_view input,
                    const HttpHeadLimits& limits) {
  const std::size_t head = scanner.head_size();
  check(head <= limits.max_head_bytes && head <= input.size());
  check(scanner.body_size() <= limits.max_body_bytes);
  const std::string_view text = input.substr(0, head);
  check(text.ends_with("\r\n\r\n"));
  std::size_t at = 0;
  std::size_t lines = 0;
  while (at < head) {
    const auto end = text.find("\r\n", at);
    check(end != std::string_view::npos);
    const std::size_t length = end - at;
    if (lines == 0) check(length <= limits.max_request_line);
    if (lines > 0) check(length <= limits.max_header_line);
    if (length > 0) ++lines;
    at = end + 2;
  }
  check(lines >= 1 && lines - 1 <= limits.max_header_lines);

  const std::string out = scanner.head_for_httplib(input);
  check(out.size() <= head && out.ends_with("\r\n\r\n"));
  std::size_t ranges = 0;
  for (std::size_t pos = out.find("\r\n") + 2; pos + 2 < out.size();) {
    const auto end = out.find("\r\n", pos);
    const std::string_view line = std::string_view(out).substr(pos, end - pos);
    const auto colon = line.find(':');
    const std::string name = lower(line.substr(0, colon));
    check(name != "expect" && name != "remote_addr" && name != "remote_port" &&
          name != "local_addr" && name != "local_port");
    if (name == "range") {
      ++ranges;
      check(acceptable_range(line.substr(colon + 1)));
    }
    pos = end + 2;
  }
  check(ranges <= 1);
}

kernelhub::fuzzing::StreamServer* server = nullptr;

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  server = new kernelhub::fuzzing::StreamServer;
  // Like the file routes, the handler takes the ranges itself: a 416 can then only be
  // httplib refusing the Range header before routing.
  server->Get(".*", [](const httplib::Request& req, httplib::Response& res) {
    (void)kernelhub::http::take_ranges(req);
    res.set_content("0123456789", "text/plain");
  });
  return 0;
}

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t mode = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool defaults = (mode & 1) == 0;
  const HttpHeadLimits limits = defaults ? HttpHeadLimits{} : small_limits();

  HeadScanner whole(limits);
  whole.scan(input);

  // The same bytes arriving in pieces of 1..8 bytes (by the mode's upper bits and the
  // bytes themselves), the buffer growing as the gate's does.
  HeadScanner split(limits);
  for (std::size_t end = 0;
       end < input.size() && split.state() == HeadScanner::State::incomplete;) {
    end = std::min(input.size(),
                   end + 1 + ((mode >> 1) + static_cast<unsigned char>(input[end])) % 8);
    split.scan(input.substr(0, end));
  }
  check(split.state() == whole.state());
  if (whole.state() == HeadScanner::State::refused) {
    check(split.status() == whole.status() && split.error_code() == whole.error_code());
    check(whole.status() >= 400 && whole.status() < 600 && !whole.message().empty());
    return 0;
  }
  if (whole.state() != HeadScanner::State::complete) return 0;
  check(split.head_size() == whole.head_size() && split.body_size() == whole.body_size());
  check(split.head_for_httplib(input) == whole.head_for_httplib(input));
  check_accepted(whole, input, limits);

  if (defaults && input.size() >= whole.head_size() + whole.body_size()) {
    std::string request = whole.head_for_httplib(input);
    request.append(input.substr(whole.head_size(), whole.body_size()));
    kernelhub::fuzzing::InputStream stream(request);
    (void)server->serve(stream);
    const std::string& reply = stream.out;
    check(!reply.starts_with("HTTP/1.1 414") && !reply.starts_with("HTTP/1.1 416") &&
          !reply.starts_with("HTTP/1.1 431") && !reply.starts_with("HTTP/1.1 500"));
  }
  return 0;
}
