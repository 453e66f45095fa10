// The backends whose kernels are Python (research/python-kernels.md): flash_4_hub
// (kernels-community/flash-attn4, CuTe DSL) and sage_blackwell_hub (SageAttention/
// sage-blackwell) from the Hub, sage_varlen and _sage_qk_int8_pv_fp16_triton from the
// `sageattention` package of the embedded Python. They run in kernelhub's Python runtime
// (kernelhub/python_kernel.hpp), on the caller's tensors, called as Diffusers 0.42.1 calls
// them; hub kernels are fetched and verified like every hub kernel.
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kernelhub/attention/backend.hpp"
#include "kernelhub/attention/checks.hpp"
#include "kernelhub/attention/kernel_provider.hpp"
#include "kernelhub/attention/masks.hpp"
#include "kernelhub/attention/requirements.hpp"
#include "kernelhub/provider/local_kernels.hpp"
#include "kernelhub/python/import_kernel.hpp"

namespace kernelhub::attention::detail {
namespace {

namespace kpy = kernelhub::python;

// The Python side of one backend, provided on first activation and kept for the process. A
// failed activation caches nothing: a later one tries again.
class LazyPythonKernel {
 public:
  LazyPythonKernel(std::string backend, std::function<kpy::Kernel()> provide)
      : backend_(std::move(backend)), provide_(std::move(provide)) {}

  void activate() {
    const std::lock_guard lock(mutex_);
    if (kernel_) return;
    try {
      kernel_.emplace(provide_());
    } catch (const kpy::KernelRefused& error) {
      throw KernelRefused(error.what());
    } catch (const kpy::BackendUnavailable& error) {
      throw BackendUnavailable(error.what());
    } catch (const kpy::PythonError& error) {
      throw BackendUnavailable(backend_ + ": importing its kernel failed: " + error.what());
    }
  }

  // Valid after activate(); the dispatcher activates a backend before its first call.
  const kpy::Kernel& kernel() const { return *kernel_; }

 private:
  std::string backend_;
  std::function<kpy::Kernel()> provide_;
  std::mutex mutex_;
  std::optional<kpy::Kernel> kernel_;
};

std::shared_ptr<LazyPythonKernel> hub_kernel(std::string_view backend, std::string_view repo,
                                             std::uint64_t version) {
  return std::make_shared<LazyPythonKernel>(std::string(backend), [backend, repo, version] {
    return kpy::get_hub_kernel({.user = backend, .repo = repo, .version = version});
  });
}

// sageattention from the interpreter's own site-packages, with the version Diffusers pins.
std::shared_ptr<LazyPythonKernel> sageattention(std::string_view backend) {
  return std::make_shared<LazyPythonKernel>(std::string(backend), [backend] {
    const std::string name(backend);
    const auto version = kpy::installed_version("sageattention");
    if (!version || !provider::version_at_least(*version, "2.1.1")) {
      throw kpy::BackendUnavailable(
          "Backend '" + name +
          "' is not usable because of missing package or the version is "
          "too old: the embedded Python has " +
          (version ? "sageattention " + *version : std::string("no sageattention")) +
          ". Please install `sageattention>=2.1.1` into the Python environment kernelhub "
          "embeds (KERNELHUB_PYTHON), or add its folder with KERNELHUB_PYTHONPATH.");
    }
    return kpy::import_installed("sageattention");
  });
}

// The device requirement, unless a CPU rehearsal relaxed it (relax_device_requirements).
void require_device(std::string_view backend, int major, int minor) {
  if (!device_requirements_relaxed()) require_cuda(backend, major, minor);
}

c10::IValue optional_scale(const AttentionInputs& inputs) {
  return inputs.options.scale ? c10::IValue(*inputs.options.scale) : c10::IValue();
}

at::Tensor first_output(const c10::IValue& result) {
  if (result.isTuple()) return result.toTupleRef().elements().at(0).toTensor();
  return result.toTensor();
}

Backend flash4_backend() {
  auto fa4 = hub_kernel("flash_4_hub", "kernels-community/flash-attn4", 0);
  Backend backend;
  backend.name = "flash_4_hub";
  backend.constraints = {check_device, check_qkv_dtype_bf16_or_fp16, check_shape};
  backend.honours = {.is_causal = true, .scale = true, .enable_gqa = true};
  backend.mask_refusal = "`attn_mask` is not supported for flash-attn 4.";
  backend.activate = [fa4] {
    require_device("flash_4_hub", 9, 0);
    fa4->activate();
  };
  auto call = [fa4](const AttentionInputs& inputs, bool lse) {
    // flash_attn_func(q, k, v, softmax_scale=None, causal=False, ...): Diffusers names q, k
    // and v too; positions are the same call, with less to build per call.
    kpy::Kwargs kwargs{{"causal", inputs.options.is_causal}};
    if (inputs.options.scale) kwargs.emplace_back("softmax_scale", *inputs.options.scale);
    // Diffusers passes no return_lse, so FA4 gives none unless autograd wants one; asking
    // for it is how the lse is had.
    if (lse) kwargs.emplace_back("return_lse", true);
    return fa4->kernel().call("flash_attn_func", {inputs.query, inputs.key, inputs.value}, kwargs);
  };
  backend.run = [call](const AttentionInputs& inputs) { return first_output(call(inputs, false)); };
  backend.run_with_lse = [call](const AttentionInputs& inputs) -> AttentionWithLse {
    const auto result = call(inputs, true);
    if (!result.isTuple() || result.toTupleRef().elements().size() < 2 ||
        !result.toTupleRef().elements()[1].isTensor()) {
      throw BackendUnavailable("flash_4_hub: the kernel returned no log-sum-exp");
    }
    const auto& parts = result.toTupleRef().elements();
    return {parts[0].toTensor(), parts[1].toTensor()};
  };
  return backend;
}

Backend sage_blackwell_backend() {
  auto sage = hub_kernel("sage_blackwell_hub", "SageAttention/sage-blackwell", 1);
  Backend backend;
  backend.name = "sage_blackwell_hub";
  backend.constraints = {check_device_cuda, check_qkv_dtype_bf16_or_fp16, check_head_dim_64_or_128,
                         check_shape};
  backend.honours = {.is_causal = true, .scale = true};
  backend.mask_refusal = "`attn_mask` is not supported for sage attention";
  backend.activate = [sage] {
    require_device("sage_blackwell_hub", 12, 0);
    sage->activate();
  };
  backend.run = [sage](const AttentionInputs& inputs) {
    const double head_scale = 1.0 / std::sqrt(static_cast<double>(inputs.query.size(-1)));
    if (inputs.options.scale && *inputs.options.scale != head_scale) {
      // The kernel derives the scale from the head dimension and ignores a given one.
      throw UnsupportedArgument(
          "A custom `scale` is not supported by the `sage_blackwell_hub` backend.");
    }
    // HND layout; the kernel subtracts k's mean in place, so it gets copies.
    const auto hnd = [](const at::Tensor& t) { return t.transpose(1, 2).contiguous(); };
    const auto out = sage->kernel().call("sageattn3_blackwell",
                                         {hnd(inputs.query), hnd(inputs.key), hnd(inputs.value)},
                                         {{"is_causal", inputs.options.is_causal}});
    return out.toTensor().transpose(1, 2).contiguous();
  };
  return backend;
}

Backend sage_varlen_backend() {
  auto sage = sageattention("sage_varlen");
  Backend backend;
  backend.name = "sage_varlen";
  backend.constraints = {check_device_cuda, check_qkv_dtype_bf16_or_fp16, check_shape};
  backend.honours = {.attn_mask = true, .is_causal = true, .scale = true};
  backend.activate = [sage] {
    require_device("sage_varlen", 8, 0);
    sage->activate();
  };
  backend.run = [sage](const AttentionInputs& inputs) {
    const VarlenPack pack =
        pack_varlen(inputs.query, inputs.key, inputs.value, inputs.options.attn_mask);
    const auto out = sage->kernel().call("sageattn_varlen", {},
                                         {{"q", pack.query},
                                          {"k", pack.key},
                                          {"v", pack.value},
                                          {"cu_seqlens_q", pack.cu_seqlens_q},
                                          {"cu_seqlens_k", pack.cu_seqlens_k},
                                          {"max_seqlen_q", pack.max_seqlen_q},
                                          {"max_seqlen_k", pack.max_seqlen_k},
                                          {"is_causal", inputs.options.is_causal},
                                          {"sm_scale", optional_scale(inputs)}});
    return unpack_varlen_output(out.toTensor(), pack);
  };
  return backend;
}

Backend sage_triton_backend() {
  auto sage = sageattention("_sage_qk_int8_pv_fp16_triton");
  Backend backend;
  backend.name = "_sage_qk_int8_pv_fp16_triton";
  backend.constraints = {check_device_cuda_atleast_sm<8, 0>, check_shape};
  backend.honours = {.is_causal = true, .scale = true};
  backend.mask_refusal = "`attn_mask` is not supported for sage attention";
  backend.activate = [sage] {
    require_device("_sage_qk_int8_pv_fp16_triton", 8, 0);
    sage->activate();
  };
  auto call = [sage](const AttentionInputs& inputs, bool lse) {
    return sage->kernel().call("sageattn_qk_int8_pv_fp16_triton", {},
                               {{"q", inputs.query},
                                {"k", inputs.key},
                                {"v", inputs.value},
                                {"tensor_layout", std::string("NHD")},
                                {"is_causal", inputs.options.is_causal},
                                {"sm_scale", optional_scale(inputs)},
                                {"return_lse", lse}});
  };
  backend.run = [call](const AttentionInputs& inputs) { return first_output(call(inputs, false)); };
  backend.run_with_lse = [call](const AttentionInputs& inputs) -> AttentionWithLse {
    const auto result = call(inputs, true);  // owns the tuple the references below point into
    const auto& parts = result.toTupleRef().elements();
    return {parts.at(0).toTensor(), parts.at(1).toTensor()};
  };
  return backend;
}

}  // namespace

void register_python_backends(std::vector<Backend>& table) {
  table.push_back(flash4_backend());
  table.push_back(sage_blackwell_backend());
  table.push_back(sage_varlen_backend());
  table.push_back(sage_triton_backend());
}

}  // namespace kernelhub::attention::detail
