// Slow-transfer detection shared by API calls and file downloads. A transfer is aborted when
// no byte has moved for `stall` (curl's LOW_SPEED_TIME only has whole-second resolution),
// when fewer than `min_bytes_per_second * window` bytes moved over the last `window` (a
// trickle keeps the stall watch quiet forever), or at `deadline`. The floor is the transfer's,
// not one attempt's: its window spans retries (time spent waiting between them excluded), so
// an upstream that sends a few bytes per connection and then drops or stalls cannot reset it.
// Each limit names the variable that raises it, for the error message.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

namespace kernelhub::hub {

struct TransferWatch {
  using Clock = std::chrono::steady_clock;
  enum class Trip { none, stall, slow, deadline };

  std::chrono::milliseconds stall{10'000};
  const char* stall_variable = "HF_HUB_ETAG_TIMEOUT";
  std::uint64_t min_bytes_per_second = 0;  // 0: no throughput floor
  std::chrono::milliseconds window{30'000};
  // When set, the floor applies to these bytes (all files of one Downloader together): files
  // sharing a slow link each move less than the link, and must not be called too slow for it.
  const std::uint64_t* aggregate = nullptr;
  std::optional<Clock::time_point> deadline;
  std::chrono::milliseconds deadline_length{0};  // for the message
  const char* deadline_variable = "KERNELHUB_API_DEADLINE";

  Trip tripped = Trip::none;
  Clock::time_point last_progress = Clock::now();
  Clock::time_point last_check = last_progress;
  curl_off_t last_bytes = -1;
  curl_off_t earlier_attempts = 0;  // bytes the earlier attempts moved (the floor counts them)
  std::deque<std::pair<Clock::time_point, curl_off_t>> samples;  // bounded by window / 100 ms

  bool stalled() const { return tripped != Trip::none; }

  // A new transfer: every watch starts over.
  void reset() {
    last_progress = Clock::now();
    last_check = last_progress;
    last_bytes = -1;
    earlier_attempts = 0;
    tripped = Trip::none;
    samples.assign(1, {last_progress, floor_bytes(0)});
  }

  // The next attempt of the same transfer: the stall watch starts over, the floor keeps its
  // window, shifted past the wait between the attempts (a Retry-After is not slowness).
  void next_attempt() {
    const auto now = Clock::now();
    const auto paused = now - last_check;
    for (auto& sample : samples) sample.first += paused;
    if (last_bytes > 0) earlier_attempts += last_bytes;
    last_progress = now;
    last_check = now;
    last_bytes = -1;
    tripped = Trip::none;
    if (samples.empty()) samples.assign(1, {now, floor_bytes(0)});
  }

  // Why the transfer was aborted and what raises the limit; empty when it was not.
  std::string trip_message() const {
    const auto seconds = [](std::chrono::milliseconds ms) {  // "2 s", "1.5 s", "0.25 s"
      std::string text = std::to_string(ms.count() / 1000);
      if (const auto rest = ms.count() % 1000; rest != 0) {
        std::string fraction = std::to_string(1000 + rest).substr(1);
        while (fraction.back() == '0') fraction.pop_back();
        text += "." + fraction;
      }
      return text + " s";
    };
    switch (tripped) {
      case Trip::stall:
        return "no data for " + seconds(stall) + " (raise " + stall_variable + ")";
      case Trip::slow:
        return "too slow: fewer than " + std::to_string(min_bytes_per_second) + " bytes/s over " +
               seconds(window) +
               " (lower KERNELHUB_MIN_BYTES_PER_SECOND or raise KERNELHUB_MIN_SPEED_WINDOW)";
      case Trip::deadline:
        return "not done within its deadline of " + seconds(deadline_length) + " (raise " +
               deadline_variable + ")";
      case Trip::none:
        break;
    }
    return {};
  }

  curl_off_t floor_bytes(curl_off_t own) const {
    return aggregate ? static_cast<curl_off_t>(*aggregate) : earlier_attempts + own;
  }

  // Decides whether to abort after `moved` bytes (of this attempt) at `now`; pure, so it is
  // unit-testable.
  Trip check(Clock::time_point now, curl_off_t moved) {
    last_check = now;
    if (deadline && now >= *deadline) return Trip::deadline;
    if (moved != last_bytes) {
      last_bytes = moved;
      last_progress = now;
    } else if (now - last_progress > stall) {
      return Trip::stall;
    }
    if (min_bytes_per_second == 0) return Trip::none;
    moved = floor_bytes(moved);
    if (samples.empty() || moved < samples.back().second) samples.assign(1, {now, moved});
    if (now - samples.back().first >= std::chrono::milliseconds(100))
      samples.emplace_back(now, moved);
    // Keep exactly one sample at or before now - window: the window's starting point.
    while (samples.size() >= 2 && samples[1].first <= now - window) samples.pop_front();
    const auto& [since, bytes_then] = samples.front();
    if (now - since < window) return Trip::none;  // not a whole window yet
    const double needed =
        static_cast<double>(min_bytes_per_second) * std::chrono::duration<double>(window).count();
    return static_cast<double>(moved - bytes_then) < needed ? Trip::slow : Trip::none;
  }

  // CURLOPT_XFERINFOFUNCTION with CURLOPT_XFERINFODATA = this; non-zero aborts.
  static int callback(void* self, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                      curl_off_t ulnow) {
    (void)dltotal;
    (void)ultotal;
    auto& watch = *static_cast<TransferWatch*>(self);
    watch.tripped = watch.check(Clock::now(), dlnow + ulnow);
    return watch.tripped == Trip::none ? 0 : 1;
  }

  void install(CURL* easy) {
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &TransferWatch::callback);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, this);
  }
};

}  // namespace kernelhub::hub
