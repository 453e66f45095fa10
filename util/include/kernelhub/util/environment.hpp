// A snapshot of environment variables. Binaries take the process's; tests build one by
// hand, so no code below the edges calls getenv() directly.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace kernelhub::util {

// True means 1/ON/YES/TRUE in any case (the Diffusers and huggingface_hub rule).
bool is_truthy(std::string_view value) noexcept;

class Environment {
 public:
  Environment() = default;
  explicit Environment(std::map<std::string, std::string, std::less<>> vars)
      : vars_(std::move(vars)) {}

  static Environment from_process();

  // A variable set to the empty string is treated as unset.
  std::optional<std::string> get(std::string_view name) const;
  bool is_true(std::string_view name) const;
  void set(std::string name, std::string value) { vars_[std::move(name)] = std::move(value); }
  void unset(std::string_view name);
  const std::map<std::string, std::string, std::less<>>& vars() const { return vars_; }

 private:
  std::map<std::string, std::string, std::less<>> vars_;
};

// A path as huggingface_hub reads it from a variable: expandvars(expanduser(value)). A leading
// "~" or "~/" becomes $HOME (the password database when HOME is unset); "~user" stays as is.
// Then $NAME and ${NAME} take the snapshot's values; names not set stay as written.
std::string expand_path(std::string_view value, const Environment& env);

}  // namespace kernelhub::util
