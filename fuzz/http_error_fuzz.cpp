// libFuzzer harness: any status, headers and body through map_http_error, as every 4xx/5xx
// from a Hub, mirror or CDN is. Input: 2 bytes of status, header lines up to an empty line,
// then the body. Properties: no crash (a 200,000-deep "error" once overflowed the stack),
// a typed error, and a message of one line whose length does not grow with the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernelhub/hub/http.hpp"

using namespace kernelhub;

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const int status = 100 + (data[0] << 8 | data[1]) % 500;
  std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  hub::HeaderMap headers;
  while (!rest.empty()) {
    const auto eol = rest.find('\n');
    const auto line = rest.substr(0, eol);
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
    if (line.empty() || line == "\r") break;
    hub::add_header_line(headers, line);
  }
  const std::string url = "https://hub.example/api/kernels/org/name/refs";
  const Error error = hub::map_http_error(status, headers, rest, url);
  if (error.message.find('\n') != std::string::npos) __builtin_trap();
  if (error.message.find('\r') != std::string::npos) __builtin_trap();
  // Fixed text + url + X-Error-Message and "error" (each cut to a few hundred bytes).
  if (error.message.size() > 200 + url.size() + 1000) __builtin_trap();
  (void)hub::is_retryable_status(status);
  return 0;
}
