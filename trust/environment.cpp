#include "trust/environment.hpp"

#include <algorithm>
#include <array>
#include <cctype>

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace kernelhub::trust {

bool is_truthy(std::string_view value) noexcept {
  std::string lower(value);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::array<std::string_view, 4> kTrue{"1", "on", "yes", "true"};
  return std::find(kTrue.begin(), kTrue.end(), lower) != kTrue.end();
}

Environment Environment::from_process() {
  std::map<std::string, std::string, std::less<>> vars;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view kv(*entry);
    const auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    vars.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return Environment(std::move(vars));
}

std::optional<std::string> Environment::get(std::string_view name) const {
  const auto it = vars_.find(name);
  if (it == vars_.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

bool Environment::is_true(std::string_view name) const {
  const auto value = get(name);
  return value && is_truthy(*value);
}

void Environment::unset(std::string_view name) {
  const auto it = vars_.find(name);
  if (it != vars_.end()) vars_.erase(it);
}

}  // namespace kernelhub::trust
