// The Python C-API functions that kernel-builder artifacts reference (REGISTER_EXTENSION's
// PyInit_* and pybind-free module set-up), as one X-macro list shared by the shim library
// (which defines stubs) and the symbol scan (which lets exactly these through).
// X(name, return type, parameter list, value returned by the stub). The stubs are never
// called: the loader never runs PyInit_*; they only satisfy BIND_NOW relocations.
#pragma once

#include <array>
#include <string_view>

#define KH_PYSHIM_FUNCTIONS(X)                                              \
  X(PyModule_Create2, void*, (void*, int), nullptr)                         \
  X(PyModuleDef_Init, void*, (void*), nullptr)                              \
  X(PyModule_AddObjectRef, int, (void*, const char*, void*), -1)            \
  X(PyModule_AddObject, int, (void*, const char*, void*), -1)               \
  X(PyModule_AddIntConstant, int, (void*, const char*, long), -1)           \
  X(PyModule_AddStringConstant, int, (void*, const char*, const char*), -1) \
  X(PyErr_SetString, void, (void*, const char*), 0)                         \
  X(PyErr_Occurred, void*, (), nullptr)                                     \
  X(Py_IncRef, void, (void*), 0)                                            \
  X(Py_DecRef, void, (void*), 0)

namespace kernelhub::loader {

#define KH_PYSHIM_NAME(name, ret, params, value) std::string_view(#name),
inline constexpr std::array kPythonShimFunctions = {KH_PYSHIM_FUNCTIONS(KH_PYSHIM_NAME)};
#undef KH_PYSHIM_NAME

}  // namespace kernelhub::loader
