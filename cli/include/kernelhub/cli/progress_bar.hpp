// A one-line progress bar for fetches, drawn on stderr only when stderr is a terminal
// (pipes and logs get nothing). Usage:
//   ProgressBar bar;
//   fetcher.fetch(req, [&](const hub::FetchProgress& p) { bar.update(p); });
//   bar.finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "kernelhub/hub/progress.hpp"

namespace kernelhub::cli {

class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;

  // Draws on stderr if it is a TTY, at most ~10 times a second.
  ProgressBar();
  // Draws on `fd` when `enabled`; for tests and for callers that decide themselves.
  ProgressBar(int fd, bool enabled,
              std::chrono::milliseconds interval = std::chrono::milliseconds(100));
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar();  // clears the line if finish() was not called

  // Safe to call from any thread; redraws when the interval has passed or the fetch completed.
  void update(const hub::FetchProgress& progress);
  // Clears the bar's line so the next output starts on a clean line.
  void finish();

  // The text of one bar line, at most `width` columns (pure; tested directly).
  static std::string render(const hub::FetchProgress& progress, double bytes_per_second,
                            std::size_t width);

 private:
  double rate(Clock::time_point now, std::uint64_t bytes);
  void draw(const std::string& line);

  int fd_;
  bool enabled_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  bool drawn_ = false;
  Clock::time_point last_draw_{};
  std::deque<std::pair<Clock::time_point, std::uint64_t>> samples_;  // for a recent-rate window
};

}  // namespace kernelhub::cli
