// resolve_cache_root: the huggingface_hub precedence, with KERNELS_CACHE (the `kernels`
// library's override) first. Values are expanded as Python does (~, $VAR, ${VAR}).
#include "kernelhub/cache/kernel_cache.hpp"

namespace kernelhub::cache {

std::filesystem::path resolve_cache_root(const util::Environment& env) {
  const auto expand = [&env](const std::string& value) -> std::filesystem::path {
    return util::expand_path(value, env);
  };
  for (const char* var : {"KERNELS_CACHE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
    if (auto value = env.get(var)) return expand(*value);
  }
  if (auto hf_home = env.get("HF_HOME")) return expand(*hf_home) / "hub";
  if (auto xdg = env.get("XDG_CACHE_HOME")) return expand(*xdg) / "huggingface" / "hub";
  return expand("~") / ".cache" / "huggingface" / "hub";
}

}  // namespace kernelhub::cache
