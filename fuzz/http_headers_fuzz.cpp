// libFuzzer harness: response headers as the client reads them: raw lines into a HeaderMap
// (add_header_line), then Retry-After/RateLimit, Link, Content-Range and ETag. Properties:
// no crash; waits are never negative and stay capped; a Link target is text of the header;
// an ETag only shrinks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernelhub/hub/downloader.hpp"
#include "kernelhub/hub/http.hpp"

using namespace kernelhub;

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  hub::HeaderMap headers;
  while (!rest.empty()) {
    const auto eol = rest.find('\n');
    hub::add_header_line(headers, rest.substr(0, eol));
    rest.remove_prefix(eol == std::string_view::npos ? rest.size() : eol + 1);
  }
  for (const auto& [name, value] : headers) {
    for (const char c : name) {
      if (c >= 'A' && c <= 'Z') __builtin_trap();  // names are lower-cased
    }
  }
  if (auto wait = hub::retry_after_seconds(headers); wait && (*wait < 0 || *wait > 24 * 3600))
    __builtin_trap();
  if (auto link = headers.find("link"); link != headers.end()) {
    if (auto next = hub::parse_link_next(link->second);
        next && link->second.find(*next) == std::string::npos)
      __builtin_trap();
  }
  if (auto range = headers.find("content-range"); range != headers.end())
    (void)hub::content_range_start(range->second);
  for (const char* name : {"etag", "x-linked-etag"}) {
    if (auto etag = headers.find(name); etag != headers.end()) {
      if (hub::normalize_etag(etag->second).size() > etag->second.size()) __builtin_trap();
    }
  }
  // The same parsers on the raw input, without the header-line framing.
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  (void)hub::parse_link_next(raw);
  (void)hub::content_range_start(raw);
  if (hub::normalize_etag(raw).size() > raw.size()) __builtin_trap();
  return 0;
}
