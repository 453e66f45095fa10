#include "kernelhub/trust/sigstore/sigstore_time.hpp"

#include <charconv>
#include <ctime>

namespace kernelhub::trust::sigstore {
namespace {

bool read_digits(std::string_view text, std::size_t pos, std::size_t count, int& out) {
  if (pos + count > text.size()) return false;
  const char* first = text.data() + pos;
  const char* last = first + count;
  for (const char* c = first; c != last; ++c) {
    if (*c < '0' || *c > '9') return false;
  }
  return std::from_chars(first, last, out).ec == std::errc{};
}

}  // namespace

std::optional<UnixSeconds> parse_rfc3339(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (text.size() < 20 || !read_digits(text, 0, 4, year) || text[4] != '-' ||
      !read_digits(text, 5, 2, month) || text[7] != '-' || !read_digits(text, 8, 2, day) ||
      (text[10] != 'T' && text[10] != 't') || !read_digits(text, 11, 2, hour) || text[13] != ':' ||
      !read_digits(text, 14, 2, minute) || text[16] != ':' || !read_digits(text, 17, 2, second)) {
    return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::size_t pos = 19;
  if (text[pos] == '.') {
    ++pos;
    const std::size_t digits_start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    if (pos == digits_start) return std::nullopt;
  }
  long offset = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int off_hours = 0, off_minutes = 0;
    if (!read_digits(text, pos + 1, 2, off_hours) || pos + 3 >= text.size() ||
        text[pos + 3] != ':' || !read_digits(text, pos + 4, 2, off_minutes)) {
      return std::nullopt;
    }
    offset = (text[pos] == '+' ? 1 : -1) * (off_hours * 3600L + off_minutes * 60L);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<UnixSeconds>(timegm(&tm)) - offset;
}

std::optional<UnixSeconds> asn1_time_seconds(const ASN1_TIME* time) {
  std::tm tm{};
  if (time == nullptr || ASN1_TIME_to_tm(time, &tm) != 1) return std::nullopt;
  return static_cast<UnixSeconds>(timegm(&tm));
}

}  // namespace kernelhub::trust::sigstore
