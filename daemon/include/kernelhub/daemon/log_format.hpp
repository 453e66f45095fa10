// How kernelhubd's log lines look. On a terminal: time, coloured level, message. Under
// systemd (stderr is the journal: JOURNAL_STREAM names it) each line starts with the
// syslog priority as "<N>", which journald turns into the entry's PRIORITY, so
// `journalctl -u kernelhubd -p warning` shows refusals and upstream errors only. Elsewhere
// (a file, a pipe): "level: message". In every target the message is escaped
// (util::printable) and cut at kMaxLogPayload bytes: one call, one line, one entry.
#pragma once

#include <spdlog/pattern_formatter.h>

#include <cstddef>
#include <memory>
#include <string_view>

namespace kernelhub::daemon {

inline constexpr std::size_t kMaxLogPayload = 8192;

enum class LogTarget { terminal, journal, plain };

// JOURNAL_STREAM is "device:inode" of the journal's stream; stderr must be that file.
LogTarget log_target(int stderr_fd, const char* journal_stream);
std::unique_ptr<spdlog::formatter> make_log_formatter(LogTarget target);
// sd-daemon(3) priorities: debug 7, info 6, warning 4, error 3, critical 2.
int syslog_priority(spdlog::level::level_enum level);

}  // namespace kernelhub::daemon
