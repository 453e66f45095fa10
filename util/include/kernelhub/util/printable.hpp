// The one rendering of outside bytes (a client's repo id, a Hub's file name, a lockfile's
// field, a daemon's error) for a log line, a terminal or an error message. Whatever the
// bytes, the result cannot move the cursor, recolour or clear a terminal (ESC, CSI), end a
// log record and forge the next one (newline: under systemd each line is a journal entry
// whose "<N>" prefix sets its priority), reorder what is shown (bidi controls), or turn a
// journal entry into an unreadable blob (invalid UTF-8).
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace kernelhub::util {

inline constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

// escaped: "\" becomes \x5c too, so the result reads back unambiguously (error messages
// built from outside text); kept: text that may already hold such escapes (a log line, a
// message from the daemon) is shown without doubling them.
enum class Backslash { kept, escaped };

// `text` with each of these bytes as \xNN: C0 controls (NUL, newline, ESC, ...), DEL, the
// UTF-8 of C1 controls (U+0080-U+009F), of U+2028/U+2029 and of the bidirectional controls
// (U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069), and every byte that is not part of
// well-formed UTF-8 (overlong, surrogate, truncated, stray continuation). Other UTF-8 is
// kept. Once the rendering reaches `max_len` bytes it ends with "...".
std::string printable(std::string_view text, std::size_t max_len = kUnbounded,
                      Backslash backslash = Backslash::kept);
// The same, appended to `out`.
void append_printable(std::string& out, std::string_view text, std::size_t max_len = kUnbounded,
                      Backslash backslash = Backslash::kept);

}  // namespace kernelhub::util
