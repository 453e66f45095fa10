// CurlHttpClient: one API request at a time, body kept in memory under a cap, retried
// with the Hub's backoff on timeouts, resets, 408/429/5xx, all within one deadline and with
// capped waits (TLS verification failures are never retried).
#include <spdlog/spdlog.h>

#include <array>
#include <thread>

#include "curl_handles.hpp"
#include "curl_options.hpp"
#include "kernelhub/hub/http.hpp"
#include "kernelhub/hub/transfer_watch.hpp"

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

Result<HttpResponse> CurlHttpClient::send_once(const HttpRequest& request, TransferWatch& watch,
                                               bool& retryable) const {
  retryable = false;
  CurlEasy easy;
  if (!easy) return fail(ErrorCode::internal, "curl_easy_init failed");
  CurlSlist headers;
  TransferOptions options{request.url, request.method == "HEAD", request.follow_redirects,
                          watch.stall, request.headers};
  KH_TRY(apply_transfer_options(easy.get(), headers, config_, options));

  Sink sink;
  sink.cap = request.max_body.value_or(config_.max_api_body);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(easy.get(), CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(easy.get(), CURLOPT_HEADERDATA, &sink);
  std::array<char, CURL_ERROR_SIZE> error_text{};
  curl_easy_setopt(easy.get(), CURLOPT_ERRORBUFFER, error_text.data());
  watch.install(easy.get());

  const CURLcode code = curl_easy_perform(easy.get());
  if (sink.overflow) {
    return fail(ErrorCode::too_large,
                "response from " + request.url + " exceeds " + std::to_string(sink.cap) + " bytes");
  }
  if (code != CURLE_OK) {
    // The deadline covers every try, and a certificate problem is permanent.
    Error error = transfer_error(code, watch, request.url, error_text.data());
    // The floor's window spans the tries: another one would find it still under the floor.
    retryable = watch.tripped != TransferWatch::Trip::deadline &&
                watch.tripped != TransferWatch::Trip::slow && !is_tls_verification_error(code) &&
                (error.code == ErrorCode::timeout || error.code == ErrorCode::network);
    return fail(std::move(error));
  }

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
  using Clock = std::chrono::steady_clock;
  // One watch for every try: the deadline covers them all, the floor's window spans them.
  TransferWatch watch;
  const bool file = request.file_size.has_value();
  watch.stall = request.timeout.value_or(file ? config_.download_timeout : config_.etag_timeout);
  watch.stall_variable = file ? "HF_HUB_DOWNLOAD_TIMEOUT" : "HF_HUB_ETAG_TIMEOUT";
  watch.min_bytes_per_second = config_.min_bytes_per_second;
  watch.window = config_.min_speed_window;
  watch.deadline_length = file ? config_.file_deadline(*request.file_size) : config_.api_deadline;
  watch.deadline_variable = file ? "KERNELHUB_DOWNLOAD_DEADLINE" : "KERNELHUB_API_DEADLINE";
  const auto deadline = Clock::now() + watch.deadline_length;
  watch.deadline = deadline;
  RetryWaits waits;
  for (int attempt = 0;; ++attempt) {
    bool retryable = false;
    if (attempt == 0) {
      watch.reset();
    } else {
      watch.next_attempt();
    }
    auto result = send_once(request, watch, retryable);
    const bool can_retry = request.retry && attempt < config_.max_retries;
    std::optional<int> asked;
    Error error;
    if (!result) {
      if (!can_retry || !retryable) return result;
      error = result.error();
    } else {
      const int status = result->status;
      if (status >= 200 && status < 400) return result;
      error = map_http_error(status, result->headers, result->body, request.url);
      if (!can_retry || !is_retryable_status(status)) return fail(std::move(error));
      asked = retry_after_seconds(result->headers);
    }
    std::string why;
    const auto wait = waits.next(config_, attempt, asked, why);
    if (!wait) return fail(error.code, error.message + "; " + why);
    if (Clock::now() + *wait >= deadline) {
      return fail(error.code, error.message +
                                  "; a retry would pass the request's deadline (raise " +
                                  watch.deadline_variable + ")");
    }
    spdlog::debug("retrying {} in {} ms after: {}", request.url, wait->count(), error.message);
    std::this_thread::sleep_for(*wait);
  }
}

}  // namespace kernelhub::hub
