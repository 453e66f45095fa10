#include "kernelhub/cli/progress_bar.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "kernelhub/cli/format_units.hpp"

namespace kernelhub::cli {
namespace {

constexpr auto kRateWindow = std::chrono::seconds(3);
constexpr std::size_t kBarCells = 24;
constexpr const char* kClearLine = "\r\033[K";

std::size_t terminal_width(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void write_all(int fd, const std::string& text) {
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a broken terminal must not break the download
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

ProgressBar::ProgressBar() : ProgressBar(STDERR_FILENO, ::isatty(STDERR_FILENO) == 1) {}

ProgressBar::ProgressBar(int fd, bool enabled, std::chrono::milliseconds interval)
    : fd_(fd), enabled_(enabled), interval_(interval) {}

ProgressBar::~ProgressBar() { finish(); }

std::string ProgressBar::render(const hub::FetchProgress& p, double bytes_per_second,
                                std::size_t width) {
  const double fraction =
      p.bytes_total > 0
          ? std::min(1.0, static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total))
          : 0.0;
  const auto filled = static_cast<std::size_t>(fraction * kBarCells);
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(fraction * 100.0));

  std::string line = "[" + std::string(filled, '#') + std::string(kBarCells - filled, '.') + "] " +
                     percent + "  " + mib(p.bytes_done) + "/" + mib(p.bytes_total) + " MiB  " +
                     format_rate(bytes_per_second) + "  " + std::to_string(p.files_done) + "/" +
                     std::to_string(p.files_total) + " files";
  if (line.size() >= width) return line.substr(0, width > 0 ? width - 1 : 0);
  // The current file gets what room is left: the whole path, else its base name, else the
  // base name's tail; nothing when so little room is left that it would be noise.
  const std::size_t room = width - 1 - line.size();
  if (!p.current_file.empty() && room >= 12) {
    std::string file = p.current_file;
    if (file.size() + 2 > room) file = file.substr(file.rfind('/') + 1);
    if (file.size() + 2 > room) file = "..." + file.substr(file.size() - (room - 5));
    line += "  " + file;
  }
  return line;
}

double ProgressBar::rate(Clock::time_point now, std::uint64_t bytes) {
  samples_.emplace_back(now, bytes);
  while (samples_.size() > 2 && now - samples_.front().first > kRateWindow) samples_.pop_front();
  const auto& [t0, b0] = samples_.front();
  const double seconds = std::chrono::duration<double>(now - t0).count();
  if (seconds <= 0 || bytes < b0) return 0.0;
  return static_cast<double>(bytes - b0) / seconds;
}

void ProgressBar::update(const hub::FetchProgress& progress) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  const auto now = Clock::now();
  const double bytes_per_second = rate(now, progress.bytes_done);
  const bool complete = progress.files_total > 0 && progress.files_done >= progress.files_total;
  if (drawn_ && !complete && now - last_draw_ < interval_) return;
  last_draw_ = now;
  draw(render(progress, bytes_per_second, terminal_width(fd_)));
}

void ProgressBar::draw(const std::string& line) {
  write_all(fd_, kClearLine + line);
  drawn_ = true;
}

void ProgressBar::finish() {
  std::lock_guard lock(mutex_);
  if (!drawn_) return;
  write_all(fd_, kClearLine);
  drawn_ = false;
}

}  // namespace kernelhub::cli
