#include "kernelhub/trust/safe_path.hpp"

#include <cctype>

#include "kernelhub/util/printable.hpp"

namespace kernelhub::trust {

std::string sanitize_for_message(std::string_view text, std::size_t max_len) {
  return util::printable(text, max_len, util::Backslash::escaped);
}

namespace {

Unexpected unsafe(std::string_view path, std::string_view why) {
  return fail(ErrorCode::unsafe_path, "refusing unsafe path '" + trust::sanitize_for_message(path) +
                                          "': " + std::string(why));
}

// %2e / %2f / %5c in any case: a server or proxy may decode them into '.', '/' or '\'.
bool has_encoded_separator(std::string_view path) {
  for (std::size_t i = 0; i + 2 < path.size(); ++i) {
    if (path[i] != '%') continue;
    const char hi = path[i + 1];
    const char lo = static_cast<char>(std::tolower(static_cast<unsigned char>(path[i + 2])));
    if ((hi == '2' && (lo == 'e' || lo == 'f')) || (hi == '5' && lo == 'c')) return true;
  }
  return false;
}

}  // namespace

Result<std::string> validate_repo_path(std::string_view path) {
  if (path.empty()) return unsafe(path, "empty path");
  if (path.size() > kMaxRepoPath) return unsafe(path, "longer than 1024 bytes");
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) return unsafe(path, "contains a control character");
    if (c == '\\') return unsafe(path, "contains a backslash");
  }
  if (path.front() == '/') return unsafe(path, "absolute path");
  if (has_encoded_separator(path))
    return unsafe(path, "contains a percent-encoded '.', '/' or '\\'");
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = path.find('/', start);
    const std::string_view segment =
        path.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (segment.empty()) return unsafe(path, "empty path segment");
    if (segment == "." || segment == "..") return unsafe(path, "'.' or '..' segment");
    if (segment.size() > kMaxPathSegment) return unsafe(path, "a segment is longer than 255 bytes");
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return std::string(path);
}

}  // namespace kernelhub::trust
