#include "hub/curl_options.hpp"

namespace kernelhub::hub {
namespace {

bool starts_with_endpoint(const std::string& url, const std::string& endpoint) {
  return url.size() > endpoint.size() && url.compare(0, endpoint.size(), endpoint) == 0 &&
         (url[endpoint.size()] == '/' || url[endpoint.size()] == '?');
}

}  // namespace

Result<void> apply_transfer_options(CURL* easy, CurlSlist& headers, const HubConfig& config,
                                    const TransferOptions& options) {
  const bool https = options.url.rfind("https://", 0) == 0;
  curl_easy_setopt(easy, CURLOPT_URL, options.url.c_str());
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  // Never follow a redirect that leaves TLS.
  curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, https ? "https" : "http,https");
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, options.follow_redirects ? 1L : 0L);
  curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(easy, CURLOPT_UNRESTRICTED_AUTH, 0L);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(easy, CURLOPT_USERAGENT, "kernelhub/0.1; file_type/kernel");
  if (options.head) curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);

  // Sizes and digests are of the stored bytes: ask for no content coding.
  if (!headers.append("Accept-Encoding: identity"))
    return fail(ErrorCode::internal, "out of memory");
  if (config.token && starts_with_endpoint(options.url, config.endpoint)) {
    if (!headers.append("Authorization: Bearer " + *config.token))
      return fail(ErrorCode::internal, "out of memory");
  }
  for (const auto& line : options.extra_headers) {
    if (!headers.append(line)) return fail(ErrorCode::internal, "out of memory");
  }
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers.get());
  return ok();
}

Error transfer_error(CURLcode code, bool stalled, const std::string& url, const char* detail) {
  std::string what = detail != nullptr && *detail != '\0' ? detail : curl_easy_strerror(code);
  if (stalled || code == CURLE_OPERATION_TIMEDOUT) {
    return {ErrorCode::timeout, "timed out talking to " + url + ": " + what};
  }
  if (code == CURLE_UNSUPPORTED_PROTOCOL) {
    return {ErrorCode::malformed_response,
            "refused a redirect that leaves https (or an unsupported protocol) for " + url};
  }
  if (code == CURLE_TOO_MANY_REDIRECTS)
    return {ErrorCode::malformed_response, "too many redirects for " + url};
  return {ErrorCode::network, "cannot reach " + url + ": " + what};
}

bool is_retryable_transfer(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_ABORTED_BY_CALLBACK:  // our stall watch
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

}  // namespace kernelhub::hub
