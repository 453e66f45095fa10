// CurlHttpClient: one API request at a time, body kept in memory under a cap, retried
// with the Hub's backoff on timeouts, resets, 408/429/5xx.
#include <spdlog/spdlog.h>

#include <thread>

#include "hub/curl_handles.hpp"
#include "hub/curl_options.hpp"
#include "hub/http.hpp"
#include "hub/transfer_watch.hpp"

namespace kernelhub::hub {
namespace {

struct Sink {
  std::string body;
  std::size_t cap = 0;
  bool overflow = false;
  HeaderMap headers;
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& sink = *static_cast<Sink*>(user);
  const std::size_t n = size * count;
  if (sink.body.size() + n > sink.cap) {
    sink.overflow = true;
    return 0;  // aborts with CURLE_WRITE_ERROR; reported as too_large
  }
  sink.body.append(data, n);
  return n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  add_header_line(static_cast<Sink*>(user)->headers, std::string_view(data, size * count));
  return size * count;
}

}  // namespace

Result<HttpResponse> CurlHttpClient::send_once(const HttpRequest& request) const {
  CurlEasy easy;
  if (!easy) return fail(ErrorCode::internal, "curl_easy_init failed");
  CurlSlist headers;
  const auto timeout = request.timeout.value_or(config_.etag_timeout);
  TransferOptions options{request.url, request.method == "HEAD", request.follow_redirects, timeout,
                          request.headers};
  KH_TRY(apply_transfer_options(easy.get(), headers, config_, options));

  Sink sink;
  sink.cap = request.max_body.value_or(config_.max_api_body);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(easy.get(), CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(easy.get(), CURLOPT_HEADERDATA, &sink);
  char error_text[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(easy.get(), CURLOPT_ERRORBUFFER, error_text);
  TransferWatch watch;
  watch.stall = timeout;
  watch.install(easy.get());

  const CURLcode code = curl_easy_perform(easy.get());
  if (sink.overflow) {
    return fail(ErrorCode::too_large,
                "response from " + request.url + " exceeds " + std::to_string(sink.cap) + " bytes");
  }
  if (code != CURLE_OK) return fail(transfer_error(code, watch.stalled, request.url, error_text));

  HttpResponse response;
  long status = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  char* effective = nullptr;
  curl_easy_getinfo(easy.get(), CURLINFO_EFFECTIVE_URL, &effective);
  response.url = effective != nullptr ? effective : request.url;
  response.headers = std::move(sink.headers);
  response.body = std::move(sink.body);
  return response;
}

Result<HttpResponse> CurlHttpClient::send(const HttpRequest& request) {
  for (int attempt = 0;; ++attempt) {
    auto result = send_once(request);
    const bool can_retry = request.retry && attempt < config_.max_retries;
    if (!result) {
      const auto code = result.error().code;
      if (can_retry && (code == ErrorCode::timeout || code == ErrorCode::network)) {
        spdlog::debug("retrying {} after: {}", request.url, result.error().message);
        std::this_thread::sleep_for(config_.backoff(attempt));
        continue;
      }
      return result;
    }
    const int status = result->status;
    if (status >= 200 && status < 400) return result;
    if (can_retry && is_retryable_status(status)) {
      auto wait = config_.backoff(attempt);
      if (auto seconds = retry_after_seconds(result->headers)) wait = config_.retry_base * *seconds;
      spdlog::debug("retrying {} after HTTP {} in {} ms", request.url, status, wait.count());
      std::this_thread::sleep_for(wait);
      continue;
    }
    return fail(map_http_error(status, result->headers, result->body, request.url));
  }
}

}  // namespace kernelhub::hub
