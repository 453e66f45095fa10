// The running libtorch and device, and which kernel-builder variants it can load.
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include <charconv>
#include <string>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/variant/variant_name.hpp"

namespace kernelhub::loader {
namespace {

std::string version_text(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// "13.2" -> {13, 2}.
std::optional<std::pair<int, int>> parse_cuda(const std::string& text) {
  int major = 0, minor = 0;
  const char* end = text.data() + text.size();
  auto [dot, ec] = std::from_chars(text.data(), end, major);
  if (ec != std::errc{} || dot == end || *dot != '.') return std::nullopt;
  auto [rest, ec2] = std::from_chars(dot + 1, end, minor);
  if (ec2 != std::errc{} || rest != end) return std::nullopt;
  return std::pair{major, minor};
}

std::string device_text(const Runtime& runtime) {
  return runtime.libtorch_cuda ? "CUDA " + *runtime.libtorch_cuda
                               : "a libtorch without CUDA (CPU only)";
}

// Empty when the backend can run here, else why not.
std::string backend_rejection(const variant::BackendToken& backend, const Runtime& runtime) {
  if (backend.family == "cpu") return {};
  if (backend.family == "cuda") {
    // Loading needs libtorch_cuda, not a GPU: without one the ops register and their calls
    // fail with torch's CUDA error.
    if (!runtime.libtorch_cuda) {
      return "built for CUDA " + version_text(backend.major, backend.minor) +
             ", but this process's libtorch has no CUDA (libtorch_cuda.so is not loaded): link "
             "libtorch_cuda and libc10_cuda, or use a cpu variant (KERNELHUB_BACKEND=cpu)";
    }
    const auto have = parse_cuda(*runtime.libtorch_cuda);
    if (!have || have->first != backend.major || have->second < backend.minor) {
      return "built for CUDA " + version_text(backend.major, backend.minor) +
             ", this libtorch uses CUDA " + *runtime.libtorch_cuda +
             " (needs the same major version and a minor version no newer)";
    }
    return {};
  }
  return "built for " + backend.token + ", this process has " + device_text(runtime) +
         " (kernelhub loads cpu and CUDA builds)";
}

}  // namespace

Runtime current_runtime() {
  Runtime runtime;
  runtime.torch_major = TORCH_VERSION_MAJOR;
  runtime.torch_minor = TORCH_VERSION_MINOR;
#if defined(__x86_64__)
  runtime.arch = "x86_64";
#elif defined(__aarch64__)
  runtime.arch = "aarch64";
#endif
  runtime.os = "linux";
  runtime.cxx11_abi = _GLIBCXX_USE_CXX11_ABI != 0;
  // hasCUDART: libtorch_cuda is loaded (its hooks registered); hasCUDA: and a device is usable.
  const auto& hooks = at::detail::getCUDAHooks();
  if (hooks.hasCUDART()) {
    const long cudart = hooks.versionCUDART();  // e.g. 13020
    runtime.libtorch_cuda =
        std::to_string(cudart / 1000) + "." + std::to_string((cudart % 1000) / 10);
    if (at::hasCUDA()) runtime.cuda = runtime.libtorch_cuda;
  }
  return runtime;
}

Result<void> check_variant_compatible(std::string_view variant, const Runtime& runtime) {
  const std::string name(variant);
  auto refuse = [&](const std::string& why) {
    return fail(ErrorCode::incompatible_kernel, "variant " + name + " cannot be loaded: " + why);
  };
  const auto parsed = variant::parse_variant_name(variant);
  if (!parsed) return refuse("not a kernel-builder variant name");
  const std::string torch = version_text(runtime.torch_major, runtime.torch_minor);
  switch (parsed->framework) {
    case variant::Framework::noarch:
      return refuse("needs Python: a torch-" + parsed->noarch_backend +
                    " build is Python code (Triton, CuTe DSL or plain PyTorch) with no "
                    "compiled ops to load");
    case variant::Framework::tvm_ffi:
      return refuse(
          "needs Python: tvm-ffi builds are loaded through the tvm_ffi Python "
          "package and register no torch ops");
    case variant::Framework::torch:
      if (parsed->major != runtime.torch_major || parsed->minor != runtime.torch_minor) {
        return refuse("built for torch " + version_text(parsed->major, parsed->minor) +
                      ", this process runs libtorch " + torch + " (full-ABI builds need the same " +
                      "major.minor)");
      }
      if (parsed->cxx11_abi && *parsed->cxx11_abi != runtime.cxx11_abi) {
        return refuse(std::string("built with the ") +
                      (*parsed->cxx11_abi ? "cxx11" : "pre-cxx11 (cxx98)") +
                      " C++ ABI, this libtorch uses the " +
                      (runtime.cxx11_abi ? "cxx11" : "pre-cxx11") + " ABI");
      }
      break;
    case variant::Framework::torch_stable_abi:
      if (std::pair{parsed->major, parsed->minor} >
          std::pair{runtime.torch_major, runtime.torch_minor}) {
        return refuse("built for the torch stable ABI " +
                      version_text(parsed->major, parsed->minor) + ", which needs libtorch >= " +
                      version_text(parsed->major, parsed->minor) + "; this process runs " + torch);
      }
      break;
  }
  if (parsed->cpu != runtime.arch) {
    return refuse("built for " + parsed->cpu + ", this machine is " + runtime.arch);
  }
  if (parsed->os != runtime.os) {
    return refuse("built for " + parsed->os + ", this process runs on " + runtime.os);
  }
  if (const auto why = backend_rejection(parsed->backend, runtime); !why.empty()) {
    return refuse(why);
  }
  return ok();
}

Result<void> check_noarch_compatible(std::string_view variant, const Runtime& runtime) {
  const auto parsed = variant::parse_variant_name(variant);
  if (!parsed || parsed->framework != variant::Framework::noarch) {
    return fail(
        ErrorCode::incompatible_kernel,
        "variant " + std::string(variant) + " is not a Python-only (torch-<backend>) build");
  }
  const std::string wanted = runtime.cuda ? "cuda" : "cpu";
  if (parsed->noarch_backend != "universal" && parsed->noarch_backend != wanted) {
    return fail(ErrorCode::incompatible_kernel,
                "variant " + std::string(variant) + " cannot be imported: it is Python for " +
                    parsed->noarch_backend + ", this process runs " + wanted);
  }
  return ok();
}

}  // namespace kernelhub::loader
