// resolve_cache_root: the huggingface_hub precedence, with KERNELS_CACHE (the `kernels`
// library's override) first.
#include <pwd.h>
#include <unistd.h>

#include <vector>

#include "cache/kernel_cache.hpp"

namespace kernelhub::cache {
namespace {

std::filesystem::path home_dir(const trust::Environment& env) {
  if (auto home = env.get("HOME")) return *home;
  // No HOME (e.g. a bare service): ask the password database, not the environment.
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* result = nullptr;
  if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr &&
      result->pw_dir != nullptr) {
    return result->pw_dir;
  }
  return "/";
}

std::filesystem::path expand_user(const std::string& value, const trust::Environment& env) {
  if (value == "~") return home_dir(env);
  if (value.rfind("~/", 0) == 0) return home_dir(env) / value.substr(2);
  return value;
}

}  // namespace

std::filesystem::path resolve_cache_root(const trust::Environment& env) {
  for (const char* var : {"KERNELS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
    if (auto value = env.get(var)) return expand_user(*value, env);
  }
  if (auto hf_home = env.get("HF_HOME")) return expand_user(*hf_home, env) / "hub";
  if (auto xdg = env.get("XDG_CACHE_HOME")) return expand_user(*xdg, env) / "huggingface" / "hub";
  return home_dir(env) / ".cache" / "huggingface" / "hub";
}

}  // namespace kernelhub::cache
