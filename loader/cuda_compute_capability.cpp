// The compute capability of a CUDA device, asked from the CUDA runtime library torch loaded.
#include <dlfcn.h>

#include "kernelhub/loader/kernel_loader.hpp"

namespace kernelhub::loader {
namespace {

// cudaDeviceAttr values from driver_types.h (stable across CUDA releases).
constexpr int kCudaDevAttrComputeCapabilityMajor = 75;
constexpr int kCudaDevAttrComputeCapabilityMinor = 76;

using CudaGetDevice = int (*)(int*);
using CudaDeviceGetAttribute = int (*)(int*, int, int);

// The runtime torch's CUDA library brought in; RTLD_NOLOAD: never load one ourselves (a
// second CUDA runtime in the process is worse than not knowing the capability).
void* loaded_cudart() {
  for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) return handle;
  }
  return nullptr;
}

}  // namespace

std::optional<std::pair<int, int>> cuda_compute_capability(int device) {
  void* cudart = loaded_cudart();
  if (cudart == nullptr) return std::nullopt;
  auto get_device = reinterpret_cast<CudaGetDevice>(dlsym(cudart, "cudaGetDevice"));
  auto get_attribute =
      reinterpret_cast<CudaDeviceGetAttribute>(dlsym(cudart, "cudaDeviceGetAttribute"));
  std::optional<std::pair<int, int>> result;
  if (get_device != nullptr && get_attribute != nullptr &&
      (device >= 0 || get_device(&device) == 0)) {
    int major = 0;
    int minor = 0;
    if (get_attribute(&major, kCudaDevAttrComputeCapabilityMajor, device) == 0 &&
        get_attribute(&minor, kCudaDevAttrComputeCapabilityMinor, device) == 0) {
      result = std::pair{major, minor};
    }
  }
  dlclose(cudart);  // drops the reference NOLOAD added; torch keeps it loaded
  return result;
}

}  // namespace kernelhub::loader
