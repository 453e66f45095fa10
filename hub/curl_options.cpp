#include "curl_options.hpp"

#include <algorithm>

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
  // The path goes out exactly as built and checked (hub/api_url.cpp): curl's own dot-segment
  // removal would send another path than the one the endpoint prefix (token scope) and the
  // redirect checks looked at, e.g. /api/kernels/a/b/tree/x/../../../c/d/... as c/d's listing.
  curl_easy_setopt(easy, CURLOPT_PATH_AS_IS, 1L);
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
  // Peer and host verification stay on (curl's defaults); only the trusted CAs change.
  if (config.ca_file) curl_easy_setopt(easy, CURLOPT_CAINFO, config.ca_file->c_str());
  if (config.ca_dir) curl_easy_setopt(easy, CURLOPT_CAPATH, config.ca_dir->c_str());

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

Error transfer_error(CURLcode code, const TransferWatch& watch, const std::string& url,
                     const char* detail) {
  std::string what = detail != nullptr && *detail != '\0' ? detail : curl_easy_strerror(code);
  if (watch.stalled())
    return {ErrorCode::timeout, "timed out on " + url + ": " + watch.trip_message()};
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return {ErrorCode::timeout,
            "timed out talking to " + url + ": " + what + " (raise " + watch.stall_variable + ")"};
  }
  if (is_tls_verification_error(code)) {
    return {ErrorCode::network,
            "TLS certificate verification failed for " + url + ": " + what +
                ". If a proxy or a private CA signs this server's certificate, point "
                "SSL_CERT_FILE (or REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE) at its CA bundle, or "
                "SSL_CERT_DIR at a hashed CA directory; not retried"};
  }
  if (code == CURLE_UNSUPPORTED_PROTOCOL) {
    return {ErrorCode::malformed_response,
            "refused a redirect that leaves https (or an unsupported protocol) for " + url};
  }
  if (code == CURLE_TOO_MANY_REDIRECTS)
    return {ErrorCode::malformed_response, "too many redirects for " + url};
  return {ErrorCode::network, "cannot reach " + url + ": " + what};
}

bool is_tls_verification_error(CURLcode code) {
  switch (code) {
    case CURLE_PEER_FAILED_VERIFICATION:  // also CURLE_SSL_CACERT: unknown CA, wrong host name
    case CURLE_SSL_CACERT_BADFILE:        // the bundle a variable names is missing or unreadable
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_CRL_BADFILE:
      return true;
    default:
      return false;
  }
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

std::optional<std::chrono::milliseconds> RetryWaits::next(const HubConfig& config, int attempt,
                                                          std::optional<int> asked,
                                                          std::string& why) {
  const long long units = asked ? *asked : 1LL << std::clamp(attempt, 0, 3);  // as backoff()
  if (asked && *asked > config.max_retry_wait) {
    why = "the server asks to wait " + std::to_string(*asked) +
          " s, more than KERNELHUB_MAX_RETRY_WAIT (" + std::to_string(config.max_retry_wait) +
          " s): try again later, or raise it";
    return std::nullopt;
  }
  if (waited_units + units > config.max_retry_wait_total) {
    why = "retrying would wait more than KERNELHUB_MAX_RETRY_WAIT_TOTAL (" +
          std::to_string(config.max_retry_wait_total) + " s) in all: try again later, or raise it";
    return std::nullopt;
  }
  waited_units += units;
  return asked ? config.retry_base * *asked : config.backoff(attempt);
}

}  // namespace kernelhub::hub
