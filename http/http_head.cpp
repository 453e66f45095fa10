#include "kernelhub/http/http_head.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace kernelhub::http {
namespace {

bool is_tchar(unsigned char c) {
  static constexpr std::string_view kExtra = "!#$%&'*+-.^_`|~";
  return std::isalnum(c) != 0 || kExtra.find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_digit);
}

// Header names httplib sets itself on every request (from the socket, not the client).
constexpr std::array<std::string_view, 4> kServerSetNames{"REMOTE_ADDR", "REMOTE_PORT",
                                                          "LOCAL_ADDR", "LOCAL_PORT"};

constexpr std::size_t kMaxRanges = 16;
constexpr std::size_t kMaxRangeDigits = 18;  // fits ssize_t: httplib's stoll never throws
constexpr std::size_t kMaxRangeValue = 512;  // httplib matches it with a recursive std::regex

}  // namespace

bool acceptable_range(std::string_view value) {
  // Exactly what httplib's parse_range_header takes, narrowed: "bytes=" then ranges split
  // by ",", whitespace only after a comma (httplib refuses it anywhere else with 416).
  value = trim_ows(value);
  if (value.size() > kMaxRangeValue || !value.starts_with("bytes=")) return false;
  value.remove_prefix(6);
  for (std::size_t count = 1; count <= kMaxRanges; ++count) {
    const auto comma = value.find(',');
    const std::string_view spec = value.substr(0, comma);
    const auto dash = spec.find('-');
    if (dash == std::string_view::npos) return false;
    const std::string_view first = spec.substr(0, dash);
    const std::string_view last = spec.substr(dash + 1);
    if (first.size() > kMaxRangeDigits || last.size() > kMaxRangeDigits) return false;
    if (first.empty()) {
      if (!all_digits(last)) return false;  // suffix range: -N
    } else {
      if (!all_digits(first) || (!last.empty() && !all_digits(last))) return false;
      if (!last.empty() && std::stoll(std::string(first)) > std::stoll(std::string(last)))
        return false;
    }
    if (comma == std::string_view::npos) return true;
    value.remove_prefix(comma + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
  }
  return false;
}

HeadScanner::State HeadScanner::refuse(int status, std::string code, std::string message) {
  status_ = status;
  error_code_ = std::move(code);
  message_ = std::move(message);
  return state_ = State::refused;
}

HeadScanner::State HeadScanner::scan(std::string_view buffered) {
  while (state_ == State::incomplete) {
    const auto newline = buffered.find('\n', scanned_);
    const std::size_t end = newline == std::string_view::npos ? buffered.size() : newline + 1;
    // A line's bound counts its CRLF: the cap is hit before the line is whole.
    const std::size_t line_cap =
        (have_request_line_ ? limits_.max_header_line : limits_.max_request_line) + 2;
    if (end - line_begin_ > line_cap) {
      if (!have_request_line_) {
        return refuse(414, "URITooLong",
                      "request line over " + std::to_string(limits_.max_request_line) +
                          " bytes: ask for a shorter URL");
      }
      return refuse(431, "RequestHeaderFieldsTooLarge",
                    "a header line is over " + std::to_string(limits_.max_header_line) +
                        " bytes: send smaller headers");
    }
    if (end > limits_.max_head_bytes) {
      return refuse(431, "RequestHeaderFieldsTooLarge",
                    "request head over " + std::to_string(limits_.max_head_bytes) +
                        " bytes: send fewer or smaller headers");
    }
    if (newline == std::string_view::npos) {
      scanned_ = buffered.size();
      return state_;
    }
    const std::size_t begin = line_begin_;
    scanned_ = line_begin_ = end;
    on_line(buffered, begin, end);
  }
  return state_;
}

HeadScanner::State HeadScanner::on_line(std::string_view buffered, std::size_t begin,
                                        std::size_t end) {
  std::string_view line = buffered.substr(begin, end - begin);
  if (line.size() < 2 || line[line.size() - 2] != '\r') {
    return refuse(400, "BadRequest", "a line of the request head ends in LF without CR");
  }
  line.remove_suffix(2);
  for (const char ch : line) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      return refuse(400, "BadRequest", "a control character in the request head");
    }
  }
  if (!have_request_line_) return on_request_line(line);
  if (line.empty()) return on_end_of_head(end);
  return on_header(line, begin, end);
}

HeadScanner::State HeadScanner::on_request_line(std::string_view line) {
  have_request_line_ = true;
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos ||
      !is_token(line.substr(0, sp1)) || sp2 == sp1 + 1) {
    return refuse(400, "BadRequest", "malformed request line: want METHOD TARGET HTTP/1.1");
  }
  const std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.1" || version == "HTTP/1.0") return state_;
  if (version.size() == 8 && version.starts_with("HTTP/") && is_digit(version[5]) &&
      version[6] == '.' && is_digit(version[7])) {
    return refuse(505, "HTTPVersionNotSupported", "only HTTP/1.1 and HTTP/1.0 are served");
  }
  return refuse(400, "BadRequest", "malformed request line: want METHOD TARGET HTTP/1.1");
}

HeadScanner::State HeadScanner::on_header(std::string_view line, std::size_t begin,
                                          std::size_t end) {
  if (++header_lines_ > limits_.max_header_lines) {
    return refuse(431, "RequestHeaderFieldsTooLarge",
                  "more than " + std::to_string(limits_.max_header_lines) +
                      " header lines: send fewer headers");
  }
  if (line.front() == ' ' || line.front() == '\t') {
    return refuse(400, "BadRequest", "folded header line (obs-fold) in the request head");
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || !is_token(line.substr(0, colon))) {
    return refuse(400, "BadRequest", "malformed header line: want Name: value");
  }
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = trim_ows(line.substr(colon + 1));
  if (iequals(name, "Content-Length")) {
    if (!all_digits(value) || value.size() > 18 ||
        (have_length_ && std::stoull(std::string(value)) != body_size_)) {
      return refuse(400, "BadRequest", "malformed or conflicting Content-Length");
    }
    have_length_ = true;
    body_size_ = std::stoull(std::string(value));
    if (body_size_ > limits_.max_body_bytes) {
      return refuse(413, "PayloadTooLarge",
                    "request body over " + std::to_string(limits_.max_body_bytes) +
                        " bytes: this server takes small bodies only");
    }
  } else if (iequals(name, "Transfer-Encoding")) {
    return refuse(411, "LengthRequired",
                  "Transfer-Encoding request bodies are not taken: send Content-Length");
  } else if (iequals(name, "Expect")) {
    if (!iequals(value, "100-continue")) {
      return refuse(417, "ExpectationFailed", "only Expect: 100-continue is understood");
    }
    expect_continue_ = true;  // the gate answers it itself
    dropped_.emplace_back(begin, end);
  } else if (iequals(name, "Range")) {
    range_ok_ = ranges_.empty() && acceptable_range(value);
    ranges_.emplace_back(begin, end);
  } else if (std::any_of(kServerSetNames.begin(), kServerSetNames.end(),
                         [&](std::string_view n) { return iequals(name, n); })) {
    dropped_.emplace_back(begin, end);
  }
  return state_;
}

HeadScanner::State HeadScanner::on_end_of_head(std::size_t end) {
  head_size_ = end;
  if (!range_ok_) dropped_.insert(dropped_.end(), ranges_.begin(), ranges_.end());
  std::sort(dropped_.begin(), dropped_.end());
  if (!have_length_) body_size_ = 0;
  return state_ = State::complete;
}

std::string HeadScanner::head_for_httplib(std::string_view buffered) const {
  std::string out;
  out.reserve(head_size_);
  std::size_t at = 0;
  for (const auto& [begin, end] : dropped_) {
    out.append(buffered.substr(at, begin - at));
    at = end;
  }
  out.append(buffered.substr(at, head_size_ - at));
  return out;
}

}  // namespace kernelhub::http
