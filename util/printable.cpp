#include "kernelhub/util/printable.hpp"

namespace kernelhub::util {
namespace {

// The length of the well-formed UTF-8 sequence at text[i] (RFC 3629 table 3.7), 0 if the
// byte there does not start one.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;   // overlong
    if (lead == 0xed) high = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;   // overlong
    if (lead == 0xf4) high = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xbf) return 0;
  }
  return length;
}

char32_t code_point(std::string_view sequence) {
  const auto lead = static_cast<unsigned char>(sequence[0]);
  char32_t cp = lead & (0x7f >> sequence.size());
  for (std::size_t k = 1; k < sequence.size(); ++k) {
    cp = (cp << 6) | (static_cast<unsigned char>(sequence[k]) & 0x3f);
  }
  return cp;
}

// Valid code points that still act on what a reader sees.
bool is_hidden_control(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x61c || cp == 0x200e || cp == 0x200f ||
         cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

void append_escaped(std::string& out, std::string_view bytes) {
  constexpr std::string_view kHex = "0123456789abcdef";
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 0xf];
  }
}

}  // namespace

void append_printable(std::string& out, std::string_view text, std::size_t max_len,
                      Backslash backslash) {
  const std::size_t start = out.size();
  std::size_t i = 0;
  while (i < text.size()) {
    if (out.size() - start >= max_len) {
      out += "...";
      return;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f || (c == '\\' && backslash == Backslash::escaped)) {
        append_escaped(out, text.substr(i, 1));
      } else {
        out += text[i];
      }
      ++i;
      continue;
    }
    const std::size_t length = utf8_length(text, i);
    if (length == 0) {
      append_escaped(out, text.substr(i, 1));
      ++i;
      continue;
    }
    const std::string_view sequence = text.substr(i, length);
    if (is_hidden_control(code_point(sequence))) {
      append_escaped(out, sequence);
    } else {
      out += sequence;
    }
    i += length;
  }
}

std::string printable(std::string_view text, std::size_t max_len, Backslash backslash) {
  std::string out;
  out.reserve(text.size() < max_len ? text.size() : max_len);
  append_printable(out, text, max_len, backslash);
  return out;
}

}  // namespace kernelhub::util
