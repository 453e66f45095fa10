// The Python C-API functions that kernel-builder artifacts reference (REGISTER_EXTENSION's
// PyInit_* and pybind-free module set-up), as one X-macro list shared by the shim library
// (which defines them) and the symbol scan (which lets exactly these through).
// X(name, return type, parameters, argument names, value returned while unbound).
//
// Unbound, the shim's functions only satisfy BIND_NOW relocations: the loader never runs
// PyInit_*. Once the embedded Python runtime loads a real libpython, these names still
// resolve to the shim for every library loaded later (the shim came first into the global
// scope), libtorch_python included; so the runtime binds the shim (kh_pyshim_bind) and
// each function forwards to libpython's.
#pragma once

#include <array>
#include <string_view>

#define KH_PYSHIM_FUNCTIONS(X)                                                               \
  X(PyModule_Create2, void*, (void* a, int b), (a, b), nullptr)                              \
  X(PyModuleDef_Init, void*, (void* a), (a), nullptr)                                        \
  X(PyModule_AddObjectRef, int, (void* a, const char* b, void* c), (a, b, c), -1)            \
  X(PyModule_AddObject, int, (void* a, const char* b, void* c), (a, b, c), -1)               \
  X(PyModule_AddIntConstant, int, (void* a, const char* b, long c), (a, b, c), -1)           \
  X(PyModule_AddStringConstant, int, (void* a, const char* b, const char* c), (a, b, c), -1) \
  X(PyErr_SetString, void, (void* a, const char* b), (a, b), 0)                              \
  X(PyErr_Occurred, void*, (), (), nullptr)                                                  \
  X(Py_IncRef, void, (void* a), (a), 0)                                                      \
  X(Py_DecRef, void, (void* a), (a), 0)

// Exported by the shim: resolve(name) gives libpython's function of that name (or null).
// Called once, before anything can call the shim's functions with real Python objects.
inline constexpr const char* kPythonShimBindSymbol = "kh_pyshim_bind";
using PythonShimResolver = void* (*)(const char* name);
using PythonShimBind = int (*)(PythonShimResolver resolve);

namespace kernelhub::loader {

#define KH_PYSHIM_NAME(name, ret, params, args, value) std::string_view(#name),
inline constexpr std::array kPythonShimFunctions = {KH_PYSHIM_FUNCTIONS(KH_PYSHIM_NAME)};
#undef KH_PYSHIM_NAME

}  // namespace kernelhub::loader
