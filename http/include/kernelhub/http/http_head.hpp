// The guarded listener's reader of request heads: bytes from a client, scanned as they
// arrive, against HttpHeadLimits. It decides before cpp-httplib sees anything: a head over
// a bound, malformed, or framed in a way we do not take (chunked bodies, obs-fold, bare LF)
// is refused with its status; a whole head is handed on with the lines httplib must not
// see removed (a malformed Range, Expect, httplib's own REMOTE_ADDR-style names).
// Pure and incremental: the same bytes give the same verdict however they are split.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernelhub/http/http_limits.hpp"

namespace kernelhub::http {

// A Range value we pass on (RFC 9110 14.1.1, bytes only, at most 16 ranges, no number over
// 18 digits, first <= last). Anything else is ignored, as the RFC allows: the whole file.
bool acceptable_range(std::string_view value);

class HeadScanner {
 public:
  enum class State { incomplete, complete, refused };

  explicit HeadScanner(const HttpHeadLimits& limits) : limits_(limits) {}

  // `buffered` is every byte received for this request so far (it only grows between
  // calls until reset()); scanning resumes where the last call stopped.
  State scan(std::string_view buffered);
  void reset() { *this = HeadScanner(limits_); }

  State state() const { return state_; }
  // complete: the head's length in `buffered` (through the blank line) and the body's.
  std::size_t head_size() const { return head_size_; }
  std::size_t body_size() const { return body_size_; }
  bool expect_continue() const { return expect_continue_; }
  // complete: the head as httplib gets it (dropped lines removed).
  std::string head_for_httplib(std::string_view buffered) const;
  // refused: the HTTP status, Hub-style error code and a message that says what to do.
  int status() const { return status_; }
  const std::string& error_code() const { return error_code_; }
  const std::string& message() const { return message_; }

 private:
  State refuse(int status, std::string code, std::string message);
  State on_line(std::string_view buffered, std::size_t begin, std::size_t end);
  State on_request_line(std::string_view line);
  State on_header(std::string_view line, std::size_t begin, std::size_t end);
  State on_end_of_head(std::size_t end);

  HttpHeadLimits limits_;
  State state_ = State::incomplete;
  std::size_t scanned_ = 0;     // bytes searched for '\n'
  std::size_t line_begin_ = 0;  // where the current line starts
  std::size_t header_lines_ = 0;
  bool have_request_line_ = false;
  bool have_length_ = false;
  std::size_t head_size_ = 0;
  std::size_t body_size_ = 0;
  bool expect_continue_ = false;
  bool range_ok_ = false;
  std::vector<std::pair<std::size_t, std::size_t>> dropped_;  // [begin, end) of lines
  std::vector<std::pair<std::size_t, std::size_t>> ranges_;   // Range lines
  int status_ = 0;
  std::string error_code_;
  std::string message_;
};

}  // namespace kernelhub::http
