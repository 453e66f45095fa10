// The dispatcher's kernels: the files kernelhub::provider hands out (LOCAL_KERNELS, the Hub
// through kernelhubd or the embedded pipeline, the lockfile in force, local kernel libraries
// with a version pin), through the loader's verify-then-dlopen; each kernel is loaded once
// per process. Errors are typed exceptions (KernelRefused for trust and verification,
// BackendUnavailable otherwise) that name the backend and say how to fix the problem.
#pragma once

#include <memory>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/provider/kernel_provider.hpp"

namespace kernelhub::attention::detail {

using provider::HubKernelSpec;
using provider::LibrarySpec;

// The loaded hub kernel (provider::provide_hub_source, then the loader).
std::shared_ptr<const loader::LoadedKernel> provide_hub_kernel(const HubKernelSpec& spec);

// A locally installed kernel library (LOCAL_KERNELS[library]) whose metadata version
// satisfies the pin.
std::shared_ptr<const loader::LoadedKernel> provide_local_library(const LibrarySpec& spec);

}  // namespace kernelhub::attention::detail
