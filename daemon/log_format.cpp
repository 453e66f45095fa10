#include "kernelhub/daemon/log_format.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "kernelhub/util/printable.hpp"

namespace kernelhub::daemon {
namespace {

// "%*": "<N>" with N the record's syslog priority.
class PriorityFlag final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string prefix = "<" + std::to_string(syslog_priority(msg.level)) + ">";
    dest.append(prefix.data(), prefix.data() + prefix.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<PriorityFlag>();
  }
};

// "%v" escaped: a message carries a client's repo id or revision, a Hub's file name or error
// text. Escaped here, at the one sink, no call site can forget it; cut short, so that no
// line reaches journald's LineMax (48 KiB), past which it would split the rest into an
// entry of its own.
class EscapedPayload final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    const std::string text =
        util::printable(std::string_view(msg.payload.data(), msg.payload.size()), kMaxLogPayload);
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedPayload>();
  }
};

}  // namespace

int syslog_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return 7;
    case spdlog::level::info:
      return 6;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::err:
      return 3;
    default:
      return 2;
  }
}

LogTarget log_target(int stderr_fd, const char* journal_stream) {
  if (journal_stream != nullptr) {
    unsigned long long device = 0;
    unsigned long long inode = 0;
    struct stat st {};
    if (std::sscanf(journal_stream, "%llu:%llu", &device, &inode) == 2 &&
        ::fstat(stderr_fd, &st) == 0 && st.st_dev == device && st.st_ino == inode) {
      return LogTarget::journal;
    }
  }
  return ::isatty(stderr_fd) ? LogTarget::terminal : LogTarget::plain;
}

std::unique_ptr<spdlog::formatter> make_log_formatter(LogTarget target) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<EscapedPayload>('v');
  switch (target) {
    case LogTarget::terminal:
      formatter->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
      break;
    case LogTarget::journal:  // journald adds its own timestamps
      formatter->add_flag<PriorityFlag>('*').set_pattern("%*%l: %v");
      break;
    case LogTarget::plain:
      formatter->set_pattern("%l: %v");
      break;
  }
  return formatter;
}

}  // namespace kernelhub::daemon
