#include "kernelhub/attention/requirements.hpp"

#include <atomic>
#include <string>

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/DeviceType.h>

#include "kernelhub/attention_dispatch.hpp"
#include "kernelhub/loader/kernel_loader.hpp"

namespace kernelhub::attention::detail {
namespace {

std::string tail(std::string_view alternatives) {
  return " or use " + std::string(alternatives) + ".";
}

}  // namespace

namespace {
std::atomic<bool> g_relaxed{false};
}  // namespace

void relax_device_requirements(bool relaxed) { g_relaxed.store(relaxed); }
bool device_requirements_relaxed() { return g_relaxed.load(); }

void require_cuda(std::string_view backend, int min_major, int min_minor,
                  std::string_view alternatives) {
  const std::string name(backend);
  if (!at::hasCUDA()) {
    throw BackendUnavailable(name +
                             " needs a CUDA device: this process has no CUDA runtime (torch "
                             "reports no CUDA). Run on a machine with an NVIDIA GPU and a CUDA "
                             "build of libtorch," +
                             tail(alternatives));
  }
  if (min_major == 0 && min_minor == 0) return;
  const std::string needed = std::to_string(min_major) + "." + std::to_string(min_minor);
  const auto capability = loader::cuda_compute_capability();
  if (!capability) {
    throw BackendUnavailable(name + " needs a CUDA device with compute capability >= " + needed +
                             ", but no CUDA runtime library (libcudart.so.13 / .12) is loaded "
                             "to ask. Use a libtorch that links libcudart dynamically," +
                             tail(alternatives));
  }
  if (*capability < std::pair{min_major, min_minor}) {
    throw BackendUnavailable(name + " needs a CUDA device with compute capability >= " + needed +
                             "; the current device has " + std::to_string(capability->first) + "." +
                             std::to_string(capability->second) +
                             ". Run on a newer GPU (select it with CUDA_VISIBLE_DEVICES)," +
                             tail(alternatives));
  }
}

void require_rocm(std::string_view backend, std::string_view alternatives) {
  const std::string name(backend);
  if (!at::hasCUDA()) {
    throw BackendUnavailable(name +
                             " needs an AMD GPU with a ROCm build of libtorch: this process has "
                             "no GPU runtime (torch reports no CUDA/HIP device). Run on a ROCm "
                             "machine (Instinct MI200/MI300) with a ROCm libtorch," +
                             tail(alternatives));
  }
  if (!at::detail::getCUDAHooks().hasROCM()) {
    throw BackendUnavailable(name +
                             " needs a ROCm build of libtorch: this process runs a CUDA (NVIDIA) "
                             "build and the kernel is a ROCm Composable Kernel build. Run on a "
                             "ROCm machine with a ROCm libtorch, or use flash_hub /"
                             " _flash_3_hub on NVIDIA GPUs.");
  }
}

void require_xla(std::string_view backend, std::string_view alternatives) {
  if (!at::hasXLA()) {
    throw BackendUnavailable(std::string(backend) +
                             " needs the XLA runtime: no XLA backend is registered in this "
                             "process (torch reports no XLA). torch_xla provides it; load its C++ "
                             "library (_XLAC) before activating," +
                             tail(alternatives));
  }
}

void require_npu(std::string_view backend, std::string_view alternatives) {
  if (c10::get_privateuse1_backend() != "npu" || !at::isPrivateUse1HooksRegistered()) {
    throw BackendUnavailable(std::string(backend) +
                             " needs an Ascend NPU: no \"npu\" PrivateUse1 backend is registered "
                             "in this process (torch_npu is not loaded). Load torch_npu's C++ "
                             "library (libtorch_npu.so) on a machine with an Ascend NPU," +
                             tail(alternatives));
  }
}

}  // namespace kernelhub::attention::detail
