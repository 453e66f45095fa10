// libkernelhub_pyshim.so: the Python C-API functions in python_shim_symbols.hpp, loaded
// RTLD_GLOBAL before the first kernel so that its BIND_NOW references resolve in a process
// without libpython. Unbound they are never called and return "failed"/nothing; bound (the
// embedded Python runtime started after the shim was loaded) they forward to libpython.
#include <atomic>

#include "kernelhub/loader/python_shim_symbols.hpp"

namespace {

// `ret` and `params` are a type and a parameter list, which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define KH_PYSHIM_POINTER(name, ret, params, args, value) \
  std::atomic<ret(*) params> real_##name{nullptr};
// NOLINTEND(bugprone-macro-parentheses)
KH_PYSHIM_FUNCTIONS(KH_PYSHIM_POINTER)
#undef KH_PYSHIM_POINTER

}  // namespace

#define KH_PYSHIM_DEFINE(name, ret, params, args, value)                            \
  extern "C" __attribute__((visibility("default"))) ret name params {               \
    if (auto* real = real_##name.load(std::memory_order_acquire)) return real args; \
    return static_cast<ret>(value);                                                 \
  }
KH_PYSHIM_FUNCTIONS(KH_PYSHIM_DEFINE)
#undef KH_PYSHIM_DEFINE

// Returns the number of functions left unbound (0 on success).
extern "C" __attribute__((visibility("default"))) int kh_pyshim_bind(PythonShimResolver resolve) {
  int unbound = 0;
// NOLINTBEGIN(bugprone-macro-parentheses): a type and a parameter list, as above
#define KH_PYSHIM_BIND(name, ret, params, args, value)                \
  if (auto* real = reinterpret_cast<ret(*) params>(resolve(#name))) { \
    real_##name.store(real, std::memory_order_release);               \
  } else {                                                            \
    ++unbound;                                                        \
  }
  // NOLINTEND(bugprone-macro-parentheses)
  KH_PYSHIM_FUNCTIONS(KH_PYSHIM_BIND)
#undef KH_PYSHIM_BIND
  return unbound;
}
