// `python-depends` of a Python-only kernel, with the `kernels` library's allow-list semantics
// (its python_depends.json, 0.17.2): a name is looked up among the general dependencies, then
// the backend's; an unknown name refuses the kernel; each known one names the pip package to
// install and the module to import (none for packages with no Python code). Nothing is ever
// installed: a missing module is reported with the pip command.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/util/result.hpp"

namespace kernelhub::python::detail {

struct PythonPackage {
  std::string dependency;                  // the metadata name: "tvm-ffi"
  std::string pip_package;                 // "apache-tvm-ffi"
  std::optional<std::string> import_name;  // "tvm_ffi"; none: nothing to check
};

// backend: cpu, cuda, rocm, metal, xpu, neuron (what the kernel runs on here). incompatible_kernel
// "Kernel module `<name>` uses unsupported kernel dependency: <dep>" for an unknown name.
Result<std::vector<PythonPackage>> resolve_python_depends(const std::vector<std::string>& depends,
                                                          std::string_view backend,
                                                          std::string_view kernel);

}  // namespace kernelhub::python::detail
