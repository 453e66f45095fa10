#include "kernelhub/loader/python_shim.hpp"

#include "kernelhub/loader/companion_library.hpp"
#include "kernelhub/loader/python_shim_symbols.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <system_error>

namespace kernelhub::loader {
namespace {

// The loader's own module: the executable when kh_loader is linked statically, else the
// shared library that contains it.
std::filesystem::path loader_module_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&companion_library_candidates), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code ec;
  auto module = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::filesystem::path{} : module.parent_path();
}

Result<void> load_shim() {
  // A Python host (or an app that links libpython) already provides the real functions.
  if (::dlsym(RTLD_DEFAULT, "PyModule_Create2") != nullptr) return ok();
  const auto candidates = python_shim_candidates(util::Environment::from_process());
  std::string tried;
  for (const auto& candidate : candidates) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(candidate, ec)) {
      tried += "\n  " + candidate.string() + ": not found";
      continue;
    }
    if (::dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) return ok();
    const char* why = ::dlerror();
    tried += "\n  " + candidate.string() + ": " + (why != nullptr ? why : "dlopen failed");
  }
  return fail(ErrorCode::load_failed,
              std::string("cannot load the Python C-API shim ") + kPythonShimFile +
                  " that kernels without a Python interpreter need; set KERNELHUB_PYSHIM to "
                  "its path or install kernelhub's libraries. Tried:" +
                  tried);
}

}  // namespace

std::vector<std::filesystem::path> companion_library_candidates(std::string_view file,
                                                                std::string_view override_variable,
                                                                const util::Environment& env) {
  if (auto explicit_path = env.get(std::string(override_variable))) return {*explicit_path};
  std::vector<std::filesystem::path> candidates;
  if (const auto dir = loader_module_dir(); !dir.empty()) {
    candidates.push_back(dir / file);
    candidates.push_back((dir / ".." / "lib" / file).lexically_normal());
  }
  candidates.push_back(std::filesystem::path(KH_INSTALL_LIBDIR) / file);
  return candidates;
}

std::vector<std::filesystem::path> python_shim_candidates(const util::Environment& env) {
  return companion_library_candidates(kPythonShimFile, "KERNELHUB_PYSHIM", env);
}

bool python_shim_loaded() { return ::dlsym(RTLD_DEFAULT, kPythonShimBindSymbol) != nullptr; }

Result<void> ensure_python_shim() {
  // Only success is remembered: a shim installed later (or KERNELHUB_PYSHIM set) is found
  // by the next kernel load.
  static std::mutex mutex;
  static bool loaded = false;
  const std::lock_guard lock(mutex);
  if (loaded) return ok();
  auto result = load_shim();
  loaded = result.has_value();
  return result;
}

}  // namespace kernelhub::loader
