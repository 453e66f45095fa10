// The Python runtime's entry points below the app API (python_kernel.hpp): for the attention
// dispatcher's Python-backed backends and the tests.
#pragma once

#include <filesystem>
#include <string_view>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/provider/kernel_provider.hpp"
#include "kernelhub/python_kernel.hpp"

namespace kernelhub::python {

// Imports a Python-only variant from files that were handed out (their fds and digests):
// every file read once and checked, `python-depends` checked, then imported from memory.
// variant_dir names where the files live, for the kernel's __file__ only.
Kernel import_kernel(const loader::KernelSource& source, const std::filesystem::path& variant_dir);

// get_kernel for a provider spec (its `user` names the caller in every message, e.g. an
// attention backend); spec.kinds is taken as compiled_or_python.
Kernel get_hub_kernel(provider::HubKernelSpec spec);

// A module the embedded interpreter imports from its own sys.path (a pip-installed library
// such as sageattention), as Diffusers imports it. Not a hub kernel: nothing to verify.
Kernel import_installed(std::string_view module);

// The version importlib.metadata gives for an installed distribution, or nullopt.
std::optional<std::string> installed_version(std::string_view distribution);

}  // namespace kernelhub::python
