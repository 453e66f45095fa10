#include "kernelhub/trust/revision.hpp"

#include "kernelhub/trust/safe_path.hpp"

namespace kernelhub::trust {
namespace {

Unexpected bad(std::string_view revision, std::string_view why) {
  return fail(ErrorCode::invalid_argument,
              "revision '" + trust::sanitize_for_message(revision) +
                  "' is not a branch, tag or commit name: " + std::string(why));
}

}  // namespace

Result<std::string> validate_revision(std::string_view revision) {
  if (revision.empty()) return bad(revision, "it is empty");
  if (revision.size() > kMaxRevision) return bad(revision, "it is longer than 255 bytes");
  for (const char ch : revision) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) return bad(revision, "it contains a control character");
    if (std::string_view(" ~^:?*[\\%").find(ch) != std::string_view::npos)
      return bad(revision, "it contains a space, '~', '^', ':', '?', '*', '[', '\\' or '%'");
  }
  if (revision == "@") return bad(revision, "'@' alone");
  if (revision.find("..") != std::string_view::npos) return bad(revision, "it contains '..'");
  if (revision.find("@{") != std::string_view::npos) return bad(revision, "it contains '@{'");
  if (revision.back() == '.') return bad(revision, "it ends with '.'");
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = revision.find('/', start);
    const std::string_view part = revision.substr(
        start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (part.empty()) return bad(revision, "an empty '/'-separated component");
    if (part.front() == '.') return bad(revision, "a component starts with '.'");
    if (part.ends_with(".lock")) return bad(revision, "a component ends with '.lock'");
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return std::string(revision);
}

}  // namespace kernelhub::trust
