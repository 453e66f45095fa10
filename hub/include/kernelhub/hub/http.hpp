// HTTP for Hub API calls: request/response types, the HttpClient seam (tests can swap it),
// the libcurl implementation with retries, and the pure helpers that interpret Hub
// headers (errors, rate limits, pagination, etags).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernelhub/hub/hub_config.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub {

using HeaderMap = std::map<std::string, std::string, std::less<>>;  // lower-cased names
struct TransferWatch;

struct HttpRequest {
  std::string method = "GET";  // GET or HEAD
  std::string url;
  std::vector<std::string> headers;  // extra "Name: value" lines
  // Follow 3xx (any host; Authorization is never sent to another host, https->http is
  // refused). Off: a 3xx is returned to the caller as a response.
  bool follow_redirects = false;
  std::optional<std::chrono::milliseconds> timeout;  // default: HubConfig::etag_timeout
  std::optional<std::size_t> max_body;               // default: HubConfig::max_api_body
  bool retry = true;                                 // retry timeouts/408/429/5xx
  // A file's body read in memory (metadata.json, kernel-status.toml) of at most this many
  // bytes: the download timeout and that file's deadline (HubConfig::file_deadline) instead
  // of the API ones, and their variables in the messages.
  std::optional<std::uint64_t> file_size;
};

struct HttpResponse {
  int status = 0;
  HeaderMap headers;  // of the final response only
  std::string body;
  std::string url;  // effective URL after redirects

  std::optional<std::string> header(std::string_view lower_name) const;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  // 2xx and 3xx are responses; anything else is a typed error (see map_http_error).
  virtual Result<HttpResponse> send(const HttpRequest& request) = 0;
};

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(HubConfig config) : config_(std::move(config)) {}
  Result<HttpResponse> send(const HttpRequest& request) override;

 private:
  // One try, watched by `watch` (its deadline covers every try, its floor spans them);
  // `retryable` says whether a failure may be tried again.
  Result<HttpResponse> send_once(const HttpRequest& request, TransferWatch& watch,
                                 bool& retryable) const;
  HubConfig config_;
};

// ---- pure helpers (unit-tested) ----

// `W/"abc"` -> `abc` (huggingface_hub _normalize_etag).
std::string normalize_etag(std::string_view etag);

// The rel="next" target of a Link header, if any.
std::optional<std::string> parse_link_next(std::string_view link_header);

// Seconds a 429/503 asks us to wait: `RateLimit: "api";r=0;t=55` -> t+1 (when r is 0 or
// absent), else a numeric Retry-After. nullopt when neither says anything usable.
std::optional<int> retry_after_seconds(const HeaderMap& headers);

// Typed error for a non-2xx/3xx response: X-Error-Code first (RepoNotFound,
// RevisionNotFound, EntryNotFound, GatedRepo); without one, a 401 on a repo URL (API or
// resolve) or a 404 on a repo API URL is repo_not_found, as huggingface_hub reads them (unless
// the token was rejected: "Invalid credentials in Authorization header"); then 401/403 ->
// unauthorized, 429 -> rate_limited, else http_status; message includes X-Error-Message /
// JSON "error".
Error map_http_error(int status, const HeaderMap& headers, std::string_view body,
                     std::string_view url);

bool is_retryable_status(int status);

// Appends a raw header line ("Name: value\r\n") to `headers` with a lower-cased name.
// A status line ("HTTP/1.1 302 Found") clears the map: headers of earlier hops are dropped.
void add_header_line(HeaderMap& headers, std::string_view line);

// Percent-encodes everything except unreserved characters, and '/' when keep_slash.

}  // namespace kernelhub::hub
