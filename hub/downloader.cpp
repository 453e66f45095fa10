#include "kernelhub/hub/downloader.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <deque>
#include <memory>
#include <thread>

#include "curl_handles.hpp"
#include "curl_options.hpp"
#include "kernelhub/hub/http.hpp"
#include "kernelhub/hub/transfer_watch.hpp"

namespace kernelhub::hub {
namespace {

using Clock = std::chrono::steady_clock;
constexpr long kBufferSize = 512L * 1024;  // curl's maximum receive buffer
constexpr std::size_t kMaxErrorBody = 4096;
constexpr auto kProgressInterval = std::chrono::milliseconds(100);

// One file: its current attempt's curl handle plus what survives between attempts.
struct Transfer {
  const DownloadJob* job = nullptr;
  CurlSlist headers;
  TransferWatch watch;
  HeaderMap response_headers;
  std::string error_body;
  std::optional<Error> failure;  // set by the write callback; fatal unless bad_range
  bool bad_range = false;        // 206 whose start was not what we asked for
  bool checked = false;          // the final response's status has been looked at
  bool writing = false;          // body goes to the writer (2xx) or to error_body
  std::uint64_t range_start = 0;
  std::uint64_t bytes_at_attempt = 0;
  int stalled_attempts = 0;  // attempts in a row without new bytes
  int attempts = 0;
  Clock::time_point not_before{};
  Clock::time_point deadline{};  // of the whole file, all attempts included
  RetryWaits waits;
  // Shared accounting, owned by run().
  std::uint64_t* bytes_done = nullptr;
  const std::string** current_file = nullptr;
  DownloadStats* stats = nullptr;
  // Last, so destroyed first: curl_multi_remove_handle runs the progress callback once more,
  // and that callback and the handle use the members above (watch, headers).
  std::unique_ptr<CurlEasy> easy;
  std::unique_ptr<MultiAttachment> attachment;
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  add_header_line(static_cast<Transfer*>(user)->response_headers,
                  std::string_view(data, size * count));
  return size * count;
}

// Decides, at the first body byte, where the bytes of this response go.
void check_response(Transfer& t) {
  t.checked = true;
  long status = 0;
  curl_easy_getinfo(t.easy->get(), CURLINFO_RESPONSE_CODE, &status);
  auto& writer = *t.job->writer;
  if (status == 200) {
    if (writer.bytes_written() > 0) {
      // Range ignored (or a fresh start): the full body follows, start the file over.
      if (auto r = writer.restart(); !r) {
        t.failure = r.error();
        return;
      }
      ++t.stats->restarted;
    }
    t.writing = true;
  } else if (status == 206) {
    const auto start = content_range_start(
        t.response_headers.count("content-range") ? t.response_headers.at("content-range") : "");
    if (!start || *start != writer.bytes_written()) {
      t.bad_range = true;
      t.failure = Error{ErrorCode::malformed_response, "bad Content-Range for " + t.job->path};
      return;
    }
    if (*start > 0) {
      writer.mark_resumed();
      ++t.stats->resumed;
    }
    t.writing = true;
  }
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  if (!t.checked) check_response(t);
  if (t.failure) return 0;
  if (!t.writing) {
    const std::size_t keep =
        std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, t.error_body.size()));
    t.error_body.append(data, keep);
    return n;
  }
  if (auto r = t.job->writer->write(data, n); !r) {
    t.failure = r.error();  // too_large (endless data) or disk_full: fatal
    return 0;
  }
  *t.bytes_done += n;
  *t.current_file = &t.job->path;
  return n;
}

Result<void> start_attempt(Transfer& t, CURLM* multi, const HubConfig& config) {
  t.easy = std::make_unique<CurlEasy>();
  if (!*t.easy) return fail(ErrorCode::internal, "curl_easy_init failed");
  t.headers = CurlSlist();
  t.response_headers.clear();
  t.error_body.clear();
  t.failure.reset();
  t.bad_range = false;
  t.checked = false;
  t.writing = false;
  const auto deadline_length = config.file_deadline(t.job->writer->expected().size);
  if (t.attempts == 0) t.deadline = Clock::now() + deadline_length;
  ++t.attempts;
  CURL* easy = t.easy->get();
  // LFS objects sit behind a redirect to storage; curl follows it and (7.58+) never sends
  // our Authorization to another host or port.
  TransferOptions options{t.job->url, false, true, config.download_timeout, {}};
  KH_TRY(apply_transfer_options(easy, t.headers, config, options));
  t.range_start = t.job->writer->bytes_written();
  if (t.range_start > 0) {
    const std::string range = std::to_string(t.range_start) + "-";
    curl_easy_setopt(easy, CURLOPT_RANGE, range.c_str());  // copied by curl
  }
  t.bytes_at_attempt = t.range_start;
  curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, kBufferSize);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, &t);
  t.watch.stall = config.download_timeout;
  t.watch.stall_variable = "HF_HUB_DOWNLOAD_TIMEOUT";
  t.watch.min_bytes_per_second = config.min_bytes_per_second;
  t.watch.window = config.min_speed_window;
  t.watch.aggregate = t.bytes_done;  // the floor is for the download as a whole
  t.watch.deadline = t.deadline;
  t.watch.deadline_length = deadline_length;
  t.watch.deadline_variable = "KERNELHUB_DOWNLOAD_DEADLINE";
  if (t.attempts == 1) {
    t.watch.reset();
  } else {
    t.watch.next_attempt();  // the floor's window goes on across retries
  }
  t.watch.install(easy);
  t.attachment = std::make_unique<MultiAttachment>(multi, easy);
  if (!t.attachment->ok()) return fail(ErrorCode::internal, "curl_multi_add_handle failed");
  return ok();
}

void end_attempt(Transfer& t) {
  t.attachment.reset();
  t.easy.reset();
}

enum class Outcome { done, retry, failed };

// After an attempt ended with `code`: done (writer finished), retry later, or failed.
Outcome judge(Transfer& t, CURLcode code, const HubConfig& config, Error& error) {
  auto& writer = *t.job->writer;
  const std::uint64_t expected = writer.expected().size;
  long status = 0;
  curl_easy_getinfo(t.easy->get(), CURLINFO_RESPONSE_CODE, &status);
  // Progress resets the retry count, but not a trickle under the throughput floor.
  if (writer.bytes_written() > t.bytes_at_attempt && t.watch.tripped != TransferWatch::Trip::slow)
    t.stalled_attempts = 0;
  const bool attempts_left =
      t.stalled_attempts < config.max_retries && t.attempts <= 4 * (config.max_retries + 1);
  std::optional<int> asked;  // Retry-After / RateLimit of a retryable status
  Error retry_error;         // reported when the retry is refused (caps, deadline)

  if (t.failure && !t.bad_range) {
    error = *t.failure;
    return Outcome::failed;
  }
  if (t.bad_range) {
    // A 206 for the wrong offset: never splice it in; start from zero instead.
    retry_error = *t.failure;
    if (auto r = writer.restart(); !r) {
      error = r.error();
      return Outcome::failed;
    }
    ++t.stats->restarted;
  } else if (code != CURLE_OK) {
    retry_error = transfer_error(code, t.watch, t.job->url, nullptr);
    retry_error.message = t.job->path + ": " + retry_error.message;
    // Final: certificate problems, the file's deadline, and the floor (its window spans the
    // attempts: another one would find it still under the floor, and hold the slot longer).
    const bool final_trip = t.watch.tripped == TransferWatch::Trip::deadline ||
                            t.watch.tripped == TransferWatch::Trip::slow;
    if (!is_retryable_transfer(code) || (code == CURLE_ABORTED_BY_CALLBACK && !t.watch.stalled()) ||
        final_trip || !attempts_left) {
      error = retry_error;
      return Outcome::failed;
    }
  } else if (status == 416 && t.range_start == expected) {
    // Everything had arrived before the connection broke.
  } else if (status == 416) {
    // The server's copy ends before the bytes already here: they cannot be resumed from.
    // Start over from zero (a whole body then settles whether the copy is short).
    retry_error = {ErrorCode::http_status,
                   t.job->path + ": the server refused to resume at byte " +
                       std::to_string(t.range_start) + " of " + std::to_string(expected) +
                       " (HTTP 416 from " + t.job->url +
                       "): its copy is shorter than the Hub's tree listing says (the file "
                       "changed on the Hub, or a proxy or mirror truncates it). The partial "
                       "download was discarded: retry later, and if it persists report the "
                       "damaged file to the kernel's publisher"};
    if (auto r = writer.restart(); !r) {
      error = r.error();
      return Outcome::failed;
    }
    ++t.stats->restarted;
    if (!attempts_left) {
      error = retry_error;
      return Outcome::failed;
    }
  } else if (status >= 200 && status < 300) {
    if (!t.checked) check_response(t);  // empty body: no write callback ran
    if (t.failure) {
      error = *t.failure;
      return Outcome::failed;
    }
    if (writer.bytes_written() < expected && !attempts_left) {
      error = {ErrorCode::size_mismatch, t.job->path + ": the server sent " +
                                             std::to_string(writer.bytes_written()) + " of " +
                                             std::to_string(expected) + " bytes"};
      return Outcome::failed;
    }
  } else if (is_retryable_status(static_cast<int>(status)) && attempts_left) {
    asked = retry_after_seconds(t.response_headers);
    retry_error =
        map_http_error(static_cast<int>(status), t.response_headers, t.error_body, t.job->url);
  } else {
    error = map_http_error(static_cast<int>(status), t.response_headers, t.error_body, t.job->url);
    return Outcome::failed;
  }

  if (writer.bytes_written() >= expected &&
      (code == CURLE_OK || writer.bytes_written() == expected) && !t.bad_range &&
      (status < 300 || status == 416)) {
    if (auto r = writer.finish(); !r) {
      error = r.error();
      error.message = t.job->path + ": " + error.message;
      return Outcome::failed;
    }
    return Outcome::done;
  }
  if (retry_error.message.empty()) {
    retry_error = {ErrorCode::size_mismatch, t.job->path + ": the server sent " +
                                                 std::to_string(writer.bytes_written()) + " of " +
                                                 std::to_string(expected) + " bytes"};
  }
  std::string why;
  const auto wait = t.waits.next(config, t.stalled_attempts, asked, why);
  if (!wait || Clock::now() + *wait >= t.deadline) {
    error = retry_error;
    error.message += "; " + (wait ? std::string("a retry would pass the file's deadline (raise "
                                                "KERNELHUB_DOWNLOAD_DEADLINE)")
                                  : why);
    return Outcome::failed;
  }
  ++t.stalled_attempts;
  t.not_before = Clock::now() + *wait;
  return Outcome::retry;
}

}  // namespace

std::optional<std::uint64_t> content_range_start(std::string_view header) {
  if (!header.starts_with("bytes ")) return std::nullopt;
  header.remove_prefix(6);
  const auto dash = header.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  std::uint64_t start = 0;
  const auto [ptr, ec] = std::from_chars(header.data(), header.data() + dash, start);
  if (ec != std::errc() || ptr != header.data() + dash) return std::nullopt;
  return start;
}

Result<void> Downloader::run(const std::vector<DownloadJob>& jobs, const ProgressCallback& progress,
                             FetchProgress base) {
  if (jobs.empty()) return ok();
  CurlMulti multi;
  if (!multi) return fail(ErrorCode::internal, "curl_multi_init failed");
  curl_multi_setopt(multi.get(), CURLMOPT_MAX_TOTAL_CONNECTIONS,
                    static_cast<long>(config_.max_parallel_downloads));

  std::uint64_t bytes_done = 0;
  const std::string* current_file = &jobs.front().path;
  std::vector<Transfer> transfers(jobs.size());
  std::deque<Transfer*> ready;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    transfers[i].job = &jobs[i];
    transfers[i].bytes_done = &bytes_done;
    transfers[i].current_file = &current_file;
    transfers[i].stats = &stats_;
    ready.push_back(&transfers[i]);
  }
  std::vector<Transfer*> waiting;  // retries sleeping until not_before
  int active = 0;
  int files_done = 0;
  auto last_report = Clock::now();
  const auto report = [&](const std::string& file, bool force) {
    if (!progress) return;
    const auto now = Clock::now();
    if (!force && now - last_report < kProgressInterval) return;
    last_report = now;
    FetchProgress p = base;
    p.current_file = file;
    p.bytes_done = base.bytes_done + bytes_done;
    p.files_done = base.files_done + files_done;
    progress(p);
  };

  while (files_done < static_cast<int>(jobs.size())) {
    const auto now = Clock::now();
    for (auto it = waiting.begin(); it != waiting.end();) {
      if ((*it)->not_before <= now) {
        ready.push_back(*it);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    while (active < config_.max_parallel_downloads && !ready.empty()) {
      Transfer* t = ready.front();
      ready.pop_front();
      KH_TRY(start_attempt(*t, multi.get(), config_));
      ++active;
    }
    int running = 0;
    if (curl_multi_perform(multi.get(), &running) != CURLM_OK)
      return fail(ErrorCode::internal, "curl_multi_perform failed");

    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi.get(), &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode code = msg->data.result;
      Error error;
      const Outcome outcome = judge(*t, code, config_, error);
      end_attempt(*t);
      --active;
      if (outcome == Outcome::failed)
        return fail(std::move(error));  // Transfers' RAII cancels the rest
      if (outcome == Outcome::done) {
        ++files_done;
        report(t->job->path, true);
      } else {
        ++stats_.retried;
        spdlog::debug("retrying {} from byte {}", t->job->path, t->job->writer->bytes_written());
        waiting.push_back(t);
      }
    }
    report(*current_file, false);
    if (files_done == static_cast<int>(jobs.size())) break;

    int timeout_ms = 100;
    for (const Transfer* t : waiting) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(t->not_before - Clock::now())
              .count();
      timeout_ms = std::clamp(static_cast<int>(left), 0, timeout_ms);
    }
    if (active > 0) {
      curl_multi_poll(multi.get(), nullptr, 0, timeout_ms, nullptr);
    } else if (ready.empty() && timeout_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    }
  }
  return ok();
}

}  // namespace kernelhub::hub
