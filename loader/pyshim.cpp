// libkernelhub_pyshim.so: stubs for the Python C-API functions in python_shim_symbols.hpp,
// loaded RTLD_GLOBAL before the first kernel so that its BIND_NOW references resolve in a
// process without libpython. Never called; each returns "failed"/nothing.
#include "kernelhub/loader/python_shim_symbols.hpp"

#define KH_PYSHIM_DEFINE(name, ret, params, value)                    \
  extern "C" __attribute__((visibility("default"))) ret name params { \
    return static_cast<ret>(value);                                   \
  }
KH_PYSHIM_FUNCTIONS(KH_PYSHIM_DEFINE)
#undef KH_PYSHIM_DEFINE
