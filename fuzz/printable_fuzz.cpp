// libFuzzer harness: util::printable, the one escaping of outside bytes for log lines,
// terminals and messages (a UTF-8 decoder over hostile bytes). Properties: no crash; the
// result holds no C0 control or DEL and is well-formed UTF-8 (so printable leaves it as it
// is); a cut result ends with "..." and stays within max_len plus one escape and the dots.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernelhub/util/printable.hpp"

using namespace kernelhub;

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t max_len = data[0] % 2 == 0 ? util::kUnbounded : data[0];
  const auto backslash = data[0] % 3 == 0 ? util::Backslash::escaped : util::Backslash::kept;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string shown = util::printable(text, max_len, backslash);
  for (const char ch : shown) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) __builtin_trap();
  }
  if (util::printable(shown) != shown) __builtin_trap();  // well-formed, nothing hidden left
  // Past max_len: at most one more unit (a 3-byte escape, 12 characters) and "...".
  if (max_len != util::kUnbounded && shown.size() > max_len + 15) __builtin_trap();
  return 0;
}
