// One torch per process: the torch package the embedded Python imports must be the one
// whose libtorch_cpu.so this process already runs (same file), or its Python bindings would
// drive another copy's dispatcher and tensors.
#pragma once

#include <filesystem>

#include "kernelhub/util/result.hpp"

namespace kernelhub::python::detail {

// The libtorch_cpu.so mapped into this process, as its loader named it.
Result<std::filesystem::path> mapped_libtorch();

// incompatible_kernel naming both files when <torch_dir>/lib/libtorch_cpu.so is another file
// (device and inode) than the mapped one.
Result<void> check_same_torch(const std::filesystem::path& torch_dir);

}  // namespace kernelhub::python::detail
