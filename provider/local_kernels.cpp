#include "kernelhub/provider/local_kernels.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

namespace kernelhub::provider {

Result<LocalKernels> parse_local_kernels(std::string_view value) {
  LocalKernels entries;
  while (!value.empty()) {
    const auto colon = value.find(':');
    const std::string_view entry = value.substr(0, colon);
    value = colon == std::string_view::npos ? std::string_view() : value.substr(colon + 1);
    if (entry.empty()) continue;
    const auto equals = entry.find('=');
    if (equals == std::string_view::npos || equals == 0 || equals + 1 == entry.size()) {
      return fail(ErrorCode::invalid_argument,
                  "LOCAL_KERNELS entry '" + std::string(entry) +
                      "' is not of the form key=path (entries are separated by ':').");
    }
    entries.emplace(std::string(entry.substr(0, equals)), std::string(entry.substr(equals + 1)));
  }
  return entries;
}

bool version_at_least(std::string_view have, std::string_view need) {
  // Split into numeric release parts and a pre-release flag; a pre-release of a release
  // sorts before it, which is all the pins here need.
  struct Parsed {
    std::vector<long> release;
    bool pre = false;
  };
  auto parse = [](std::string_view text) {
    Parsed parsed;
    while (!text.empty()) {
      long number = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
      if (ec != std::errc()) break;
      parsed.release.push_back(number);
      text.remove_prefix(static_cast<std::size_t>(end - text.data()));
      if (text.empty()) break;
      if (text.front() != '.') {
        parsed.pre = text.front() == 'a' || text.front() == 'b' || text.front() == 'r';
        break;
      }
      text.remove_prefix(1);
    }
    return parsed;
  };
  Parsed a = parse(have);
  Parsed b = parse(need);
  const std::size_t n = std::max(a.release.size(), b.release.size());
  a.release.resize(n, 0);
  b.release.resize(n, 0);
  if (a.release != b.release) return a.release > b.release;
  return !a.pre || b.pre;
}

}  // namespace kernelhub::provider
