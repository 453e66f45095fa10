#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/strings.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace kernelhub::util {

bool is_truthy(std::string_view value) noexcept {
  const std::string lower = ascii_lower(value);
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

namespace {

std::string home_dir(const Environment& env) {
  if (auto home = env.get("HOME")) return *home;
  // No HOME (e.g. a bare service): the password database, as Python's expanduser does.
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* result = nullptr;
  if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr &&
      result->pw_dir != nullptr) {
    return result->pw_dir;
  }
  return "/";
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

}  // namespace

std::string expand_path(std::string_view value, const Environment& env) {
  std::string user;
  if (value == "~" || value.starts_with("~/")) {
    user = home_dir(env);
    if (value.size() > 1 && user.ends_with('/')) user.pop_back();  // "/" + "/x" -> "/x"
    value.remove_prefix(1);
  }
  user += value;

  // Python's expandvars: $NAME ([A-Za-z0-9_]+) and ${ANYTHING}; a set variable is replaced
  // (empty values included), an unset one is left as written.
  std::string out;
  out.reserve(user.size());
  std::size_t i = 0;
  while (i < user.size()) {
    if (user[i] != '$') {
      out += user[i++];
      continue;
    }
    std::size_t name_begin = i + 1;
    std::size_t name_end = name_begin;
    std::size_t next = name_begin;
    if (name_begin < user.size() && user[name_begin] == '{') {
      const auto close = user.find('}', name_begin + 1);
      if (close == std::string::npos) {
        out += user[i++];
        continue;
      }
      name_begin += 1;
      name_end = close;
      next = close + 1;
    } else {
      while (name_end < user.size() && is_name_char(user[name_end])) ++name_end;
      next = name_end;
    }
    if (name_end == name_begin && next == name_end) {  // a lone '$'
      out += user[i++];
      continue;
    }
    const auto it =
        env.vars().find(std::string_view(user).substr(name_begin, name_end - name_begin));
    if (it == env.vars().end()) {
      out.append(user, i, next - i);
    } else {
      out += it->second;
    }
    i = next;
  }
  return out;
}

}  // namespace kernelhub::util
