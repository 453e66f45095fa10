// Options every Hub transfer shares: protocols, redirects, TLS, Authorization scoping,
// timeouts. Used by CurlHttpClient (API calls) and the Downloader (file bodies).
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <string>
#include <vector>

#include "hub/curl_handles.hpp"
#include "hub/hub_config.hpp"
#include "trust/result.hpp"

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

// Typed error for a failed transfer; `stalled` says our stall watch aborted it.
Error transfer_error(CURLcode code, bool stalled, const std::string& url, const char* detail);

// Transport failures worth another attempt (timeouts, resets, refused connections).
bool is_retryable_transfer(CURLcode code);

}  // namespace kernelhub::hub
