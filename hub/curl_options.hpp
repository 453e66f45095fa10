// Options every Hub transfer shares: protocols, redirects, TLS (CA bundle variables),
// Authorization scoping, timeouts. Used by CurlHttpClient (API calls) and the Downloader (file
// bodies).
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "curl_handles.hpp"
#include "kernelhub/hub/hub_config.hpp"
#include "kernelhub/hub/transfer_watch.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub {

struct TransferOptions {
  std::string url;
  bool head = false;
  bool follow_redirects = false;
  std::chrono::milliseconds connect_timeout{10'000};
  std::vector<std::string> extra_headers;
};

// Sets the shared options on `easy`; `headers` receives the header list and must outlive
// the transfer. The token is only attached to URLs under the configured endpoint, and
// curl itself never forwards it to another host or port on a redirect.
Result<void> apply_transfer_options(CURL* easy, CurlSlist& headers, const HubConfig& config,
                                    const TransferOptions& options);

// Typed error for a failed transfer; `watch` says which of our limits aborted it, if any.
// Certificate problems say which variables name a CA bundle.
Error transfer_error(CURLcode code, const TransferWatch& watch, const std::string& url,
                     const char* detail);

// Transport failures worth another attempt (timeouts, resets, refused connections). TLS
// verification failures are permanent: never retried.
bool is_retryable_transfer(CURLcode code);

// The server's certificate (or our CA bundle) is the problem: retrying cannot help.
bool is_tls_verification_error(CURLcode code);

// Waits between the tries of one request, in retry units (HubConfig::retry_base): a wait the
// server asks for (Retry-After / RateLimit) above max_retry_wait, or waits adding up to more
// than max_retry_wait_total, are refused so that one request cannot sleep for hours.
struct RetryWaits {
  long long waited_units = 0;
  // The wait before try `attempt + 1`: `asked` units, else the backoff. nullopt when a cap
  // refuses it; `why` then says which cap and which variable raises it.
  std::optional<std::chrono::milliseconds> next(const HubConfig& config, int attempt,
                                                std::optional<int> asked, std::string& why);
};

}  // namespace kernelhub::hub
