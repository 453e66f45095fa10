// Making the Python C-API shim (libkernelhub_pyshim.so) visible to kernels before their
// first dlopen, unless the process already hosts Python.
#pragma once

#include <filesystem>
#include <vector>

#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::loader {

inline constexpr const char* kPythonShimFile = "libkernelhub_pyshim.so";

// Where the shim is looked for, in order: $KERNELHUB_PYSHIM (then the only candidate), the
// directory of the module holding the loader and its ../lib, the install libdir.
std::vector<std::filesystem::path> python_shim_candidates(const util::Environment& env);

// Whether the shim is in the global scope (then a real libpython loaded later must bind it).
bool python_shim_loaded();

// Once per process: nothing when PyModule_Create2 already resolves (a Python host), else
// dlopen the first candidate with RTLD_NOW|RTLD_GLOBAL. load_failed when none loads.
Result<void> ensure_python_shim();

}  // namespace kernelhub::loader
