#include "runtime.hpp"

#include <dlfcn.h>

#include <mutex>
#include <optional>
#include <string>

#include "interpreter_probe.hpp"
#include "kernelhub/loader/companion_library.hpp"
#include "kernelhub/loader/python_shim.hpp"
#include "kernelhub/loader/python_shim_symbols.hpp"
#include "torch_identity.hpp"

namespace kernelhub::python::detail {
namespace {

// libpython's handle, for the shim's resolver (a plain function pointer: no captures).
void* g_libpython = nullptr;

void* resolve_in_libpython(const char* name) { return ::dlsym(g_libpython, name); }

std::string dl_error() {
  const char* why = ::dlerror();
  return why != nullptr ? why : "unknown error";
}

bool host_runs_python() {
  using IsInitialized = int (*)();
  auto* initialized = reinterpret_cast<IsInitialized>(::dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  return initialized != nullptr && initialized() != 0;
}

Result<void> load_global(const std::filesystem::path& library, const std::string& what,
                         void** handle = nullptr) {
  void* loaded = ::dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (loaded == nullptr) {
    return fail(ErrorCode::load_failed,
                "cannot load " + what + " " + library.string() + ": " + dl_error());
  }
  if (handle != nullptr) *handle = loaded;
  return ok();
}

// Our own interpreter: the user's Python, checked against this process's torch.
Result<InterpreterSetup> embedded_setup(const util::Environment& env) {
  KH_TRY_ASSIGN(const auto install, probe_python(env));
  const std::string version = std::to_string(install.major) + "." + std::to_string(install.minor);
  if (version != KH_BRIDGE_PYTHON_VERSION) {
    return fail(ErrorCode::incompatible_kernel,
                install.python.string() + " is Python " + version +
                    "; this kernelhub's Python bridge was built for Python " +
                    KH_BRIDGE_PYTHON_VERSION + ". Set KERNELHUB_PYTHON to a python " +
                    KH_BRIDGE_PYTHON_VERSION + " whose torch this process runs");
  }
  if (!install.torch_dir) {
    return fail(ErrorCode::load_failed, install.python.string() +
                                            " has no torch; Python kernels run in the Python "
                                            "environment this app's libtorch comes from");
  }
  KH_TRY(check_same_torch(*install.torch_dir));
  if (install.libpython.empty()) {
    return fail(ErrorCode::load_failed,
                install.python.string() +
                    " has no shared libpython (it was built without --enable-shared); install "
                    "your distribution's libpython" +
                    version + " package or use a Python that has one");
  }
  KH_TRY(load_global(install.libpython, "libpython", &g_libpython));
  // A native kernel loaded before put the C-API shim first in the global scope: from now on
  // its functions must be libpython's.
  if (loader::python_shim_loaded()) {
    auto* bind = reinterpret_cast<PythonShimBind>(::dlsym(RTLD_DEFAULT, kPythonShimBindSymbol));
    if (bind(&resolve_in_libpython) != 0) {
      return fail(ErrorCode::load_failed,
                  "cannot bind the Python C-API shim to " + install.libpython.string());
    }
  }
  InterpreterSetup setup;
  setup.executable = install.executable;
  setup.prefix = install.prefix;
  setup.exec_prefix = install.exec_prefix;
  setup.base_prefix = install.base_prefix;
  setup.base_exec_prefix = install.base_exec_prefix;
  setup.module_search_paths = install.path;
  setup.torch_dir = install.torch_dir->string();
  return setup;
}

Result<Bridge*> load_bridge(const util::Environment& env) {
  std::string tried;
  for (const auto& candidate :
       loader::companion_library_candidates(kBridgeFile, "KERNELHUB_PYTHON_BRIDGE", env)) {
    void* handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      tried += "\n  " + candidate.string() + ": " + dl_error();
      continue;
    }
    auto* factory = reinterpret_cast<BridgeFactory>(::dlsym(handle, kBridgeFactorySymbol));
    Bridge* bridge = factory != nullptr ? factory() : nullptr;
    if (bridge == nullptr || bridge->abi() != kBridgeAbi) {
      return fail(ErrorCode::load_failed,
                  candidate.string() + " is not the Python bridge of this kernelhub build");
    }
    return bridge;
  }
  return fail(ErrorCode::load_failed,
              std::string("cannot load kernelhub's Python bridge ") + kBridgeFile +
                  "; set KERNELHUB_PYTHON_BRIDGE to its path or install kernelhub's libraries. "
                  "Tried:" +
                  tried);
}

Result<Bridge*> start(const util::Environment& env) {
  if (std::string_view(KH_BRIDGE_PYTHON_VERSION).empty()) {
    return fail(ErrorCode::load_failed,
                "this kernelhub was built without its Python bridge (no Python headers or no "
                "libtorch_python at build time), so it cannot run Python kernels");
  }
  if (env.get("KERNELHUB_PYTHON").value_or("") == "off") {
    return fail(ErrorCode::load_failed,
                "Python kernels are switched off (KERNELHUB_PYTHON=off); unset it to run them");
  }
  InterpreterSetup setup;
  if (host_runs_python()) {
    // The host's interpreter and its torch: it must be this process's (checked on import).
    KH_TRY_ASSIGN(const auto libtorch, mapped_libtorch());
    setup.torch_dir = libtorch.parent_path().parent_path().string();
  } else {
    KH_TRY_ASSIGN(setup, embedded_setup(env));
  }
  // The bridge needs libtorch_python by name; this torch's own copy.
  KH_TRY(load_global(std::filesystem::path(setup.torch_dir) / "lib" / "libtorch_python.so",
                     "torch's Python bindings"));
  KH_TRY_ASSIGN(auto* bridge, load_bridge(env));
  PythonFailure failure;
  KH_TRY(bridge->start(setup, failure));
  return bridge;
}

}  // namespace

Result<Bridge*> started_bridge(const util::Environment& env) {
  static std::mutex mutex;
  static std::optional<Result<Bridge*>> outcome;
  const std::lock_guard lock(mutex);
  if (!outcome) outcome.emplace(start(env));
  return *outcome;
}

}  // namespace kernelhub::python::detail
