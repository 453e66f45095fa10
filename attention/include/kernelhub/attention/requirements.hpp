// Activation-time requirements of backends that need a device or runtime this process may
// not have. Each throws BackendUnavailable saying what is missing and how to get it;
// `alternatives` ends the message ("or use <alternatives>.").
#pragma once

#include <optional>
#include <string_view>
#include <utility>

namespace kernelhub::attention::detail {

inline constexpr std::string_view kNativeAlternatives = "native / _native_math / _native_flash";

// A CUDA device (torch reports CUDA) with compute capability >= min_major.min_minor
// (0.0: any).
void require_cuda(std::string_view backend, int min_major = 0, int min_minor = 0,
                  std::string_view alternatives = kNativeAlternatives);
// A ROCm (AMD GPU) build of torch with a device.
void require_rocm(std::string_view backend, std::string_view alternatives = kNativeAlternatives);
// The XLA dispatch key's runtime (torch_xla's C++ side) registered in this process.
void require_xla(std::string_view backend, std::string_view alternatives = kNativeAlternatives);
// torch_npu's PrivateUse1 backend ("npu") registered in this process.
void require_npu(std::string_view backend, std::string_view alternatives = kNativeAlternatives);

// The backends whose kernels are Python (flash_4_hub, sage_blackwell_hub, sage_varlen,
// _sage_qk_int8_pv_fp16_triton) skip their device requirement while this is on, so that a
// CPU rehearsal (the tests, scripts/gpu-check.sh --rehearse-on-cpu) runs their Python on CPU
// tensors. Off unless a test or the rehearsal turns it on: no variable reaches it.
void relax_device_requirements(bool relaxed);
bool device_requirements_relaxed();

}  // namespace kernelhub::attention::detail
