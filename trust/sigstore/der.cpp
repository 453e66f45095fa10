#include "der.hpp"

#include <cstdint>
#include <vector>

namespace kernelhub::trust::sigstore {
namespace {

struct Element {
  unsigned char tag = 0;
  std::string_view whole;    // tag, length and content
  std::string_view content;  // content only
};

// One element at the start of `der` (definite lengths of up to 4 bytes, single-byte tags).
std::optional<Element> read_element(std::string_view der) {
  if (der.size() < 2) return std::nullopt;
  const auto tag = static_cast<unsigned char>(der[0]);
  if ((tag & 0x1f) == 0x1f) return std::nullopt;  // multi-byte tags do not occur here
  std::size_t length = static_cast<unsigned char>(der[1]);
  std::size_t header = 2;
  if (length & 0x80) {
    const std::size_t bytes = length & 0x7f;
    if (bytes == 0 || bytes > 4 || der.size() < 2 + bytes) return std::nullopt;
    length = 0;
    for (std::size_t i = 0; i < bytes; ++i) {
      length = (length << 8) | static_cast<unsigned char>(der[2 + i]);
    }
    header += bytes;
  }
  if (der.size() - header < length) return std::nullopt;
  return Element{tag, der.substr(0, header + length), der.substr(header, length)};
}

// The children of a constructed element's content, in order.
std::optional<std::vector<Element>> children(std::string_view content) {
  std::vector<Element> out;
  while (!content.empty()) {
    const auto element = read_element(content);
    if (!element) return std::nullopt;
    out.push_back(*element);
    content.remove_prefix(element->whole.size());
  }
  return out;
}

std::string with_header(unsigned char tag, const std::string& content) {
  std::string out(1, static_cast<char>(tag));
  const std::size_t length = content.size();
  if (length < 0x80) {
    out.push_back(static_cast<char>(length));
  } else {
    std::string bytes;
    for (std::size_t rest = length; rest != 0; rest >>= 8) {
      bytes.insert(bytes.begin(), static_cast<char>(rest & 0xff));
    }
    out.push_back(static_cast<char>(0x80 | bytes.size()));
    out += bytes;
  }
  return out + content;
}

constexpr unsigned char kSequence = 0x30;
constexpr unsigned char kExtensionsTag = 0xa3;  // [3] EXPLICIT Extensions

}  // namespace

std::optional<std::string> tbs_without_extension(std::string_view certificate_der,
                                                 std::string_view extension_oid) {
  const auto certificate = read_element(certificate_der);
  if (!certificate || certificate->tag != kSequence) return std::nullopt;
  const auto tbs = read_element(certificate->content);
  if (!tbs || tbs->tag != kSequence) return std::nullopt;
  const auto fields = children(tbs->content);
  if (!fields) return std::nullopt;
  std::string rebuilt;
  bool removed = false;
  for (const Element& field : *fields) {
    if (field.tag != kExtensionsTag) {
      rebuilt.append(field.whole);
      continue;
    }
    const auto list = read_element(field.content);
    if (!list || list->tag != kSequence || list->whole.size() != field.content.size()) {
      return std::nullopt;
    }
    const auto extensions = children(list->content);
    if (!extensions) return std::nullopt;
    std::string kept;
    for (const Element& extension : *extensions) {
      const auto oid = extension.tag == kSequence ? read_element(extension.content) : std::nullopt;
      if (!oid) return std::nullopt;
      if (oid->whole == extension_oid) {
        removed = true;
      } else {
        kept.append(extension.whole);
      }
    }
    if (!kept.empty()) rebuilt += with_header(kExtensionsTag, with_header(kSequence, kept));
  }
  if (!removed) return std::nullopt;
  return with_header(kSequence, rebuilt);
}

}  // namespace kernelhub::trust::sigstore
