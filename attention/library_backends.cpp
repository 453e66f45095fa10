// Library backends (flash, flash_varlen, _flash_3, _flash_varlen_3, sage, the compiled
// _sage_qk_*, xformers): Diffusers imports a pip-installed package for these; a C++ process
// loads a locally installed kernel build of that library instead, named in LOCAL_KERNELS
// (flash-attn=/path:sageattention=/path:...), with the version pin Diffusers applies.
#include <memory>
#include <string>

#include <ATen/ops/repeat_interleave.h>

#include "flash_kernels.hpp"
#include "kernelhub/attention/backend.hpp"
#include "kernelhub/attention/checks.hpp"
#include "kernelhub/attention/kernel_provider.hpp"
#include "kernelhub/attention/lazy_op.hpp"
#include "kernelhub/attention/masks.hpp"
#include "kernelhub/attention/requirements.hpp"
#include "kernelhub/attention/sage_kernel.hpp"

namespace kernelhub::attention::detail {
namespace {

constexpr LibrarySpec kFlashAttn{"flash", "flash-attn", "2.6.3", "flash-attn>=2.6.3"};
constexpr LibrarySpec kFlashAttn3{"_flash_3", "flash-attn3", "", "flash-attn3 (FA3 beta build)"};
constexpr LibrarySpec kSage{"sage", "sageattention", "2.1.1", "sageattention>=2.1.1"};
constexpr LibrarySpec kXformers{"xformers", "xformers", "0.0.29", "xformers>=0.0.29"};

std::shared_ptr<LazyOp> library_op(std::string_view backend, LibrarySpec spec, std::string op) {
  spec.backend = backend;
  return std::make_shared<LazyOp>(
      std::string(backend), [spec] { return provide_local_library(spec); }, std::move(op));
}

Backend sage_library_backend(const std::string& name, std::function<void()> require_device,
                             SagePath path = SagePath::fp16_pv) {
  auto sage = std::make_shared<SageKernel>(name, path);
  Backend backend;
  backend.name = name;
  backend.constraints = {check_device, check_qkv_dtype_bf16_or_fp16, check_shape};
  backend.honours = {
      .attn_mask = false, .dropout_p = false, .is_causal = true, .scale = true, .enable_gqa = true};
  backend.mask_refusal = "`attn_mask` is not supported for sage attention.";
  backend.activate = [sage, name, require_device = std::move(require_device)] {
    require_device();
    LibrarySpec spec = kSage;
    sage->activate([spec, name] {
      LibrarySpec named = spec;
      named.backend = name;
      return provide_local_library(named);
    });
  };
  backend.run = [sage](const AttentionInputs& inputs) { return sage->forward(inputs); };
  backend.run_with_lse = [sage](const AttentionInputs& inputs) {
    return sage->forward_with_lse(inputs);
  };
  return backend;
}

// Diffusers' xformers mask rule: a 2-D (B, Skv) or 4-D mask becomes an additive bias of
// shape (B, H, Sq, Skv); anything else is refused.
at::Tensor xformers_attention_bias(const at::Tensor& mask, const at::Tensor& query,
                                   const at::Tensor& key) {
  at::Tensor bias = additive_mask(mask, query.scalar_type());
  if (bias.dim() == 2) {
    bias = bias.view({bias.size(0), 1, 1, bias.size(1)});
  } else if (bias.dim() != 4) {
    throw InvalidInput("Only 2D and 4D attention masks are supported for xformers attention.");
  }
  return bias.expand({query.size(0), query.size(2), query.size(1), key.size(1)});
}

// xformers' memory-efficient attention over an additive bias.
Backend xformers_backend() {
  auto op = library_op("xformers", kXformers, "efficient_attention_forward");
  Backend backend;
  backend.name = "xformers";
  backend.constraints = {check_attn_mask_or_causal, check_device, check_shape};
  backend.honours = {
      .attn_mask = true, .dropout_p = true, .is_causal = true, .scale = true, .enable_gqa = true};
  backend.activate = [op] { op->activate(); };
  backend.run = [op](const AttentionInputs& inputs) {
    const auto& options = inputs.options;
    if (options.attn_mask && options.is_causal) {
      // xformers replaces any mask by its causal mask; refusing beats dropping the mask.
      throw UnsupportedArgument(
          "xformers: `is_causal` cannot be True when `attn_mask` is not None. Fold the causal "
          "structure into attn_mask, or pass only one of them.");
    }
    at::Tensor key = inputs.key;
    at::Tensor value = inputs.value;
    const int64_t groups = inputs.query.size(2) / key.size(2);
    if (groups > 1) {
      key = at::repeat_interleave(key, groups, 2);
      value = at::repeat_interleave(value, groups, 2);
    }
    c10::IValue bias;
    if (options.attn_mask) {
      bias = xformers_attention_bias(*options.attn_mask, inputs.query, key);
    }
    c10::IValue scale;
    if (options.scale) scale = *options.scale;
    return loader::output_tensors(op->op().call({inputs.query, key, value, bias, options.dropout_p,
                                                 scale, options.is_causal}))
        .at(0);
  };
  return backend;
}

}  // namespace

void register_library_backends(std::vector<Backend>& table) {
  table.push_back(make_flash2_backend("flash", library_op("flash", kFlashAttn, "fwd"), false));
  table.push_back(make_flash2_backend("flash_varlen",
                                      library_op("flash_varlen", kFlashAttn, "varlen_fwd"), true));
  table.push_back(
      make_flash3_backend("_flash_3", library_op("_flash_3", kFlashAttn3, "fwd"), false));
  table.push_back(make_flash3_backend("_flash_varlen_3",
                                      library_op("_flash_varlen_3", kFlashAttn3, "fwd"), true));

  table.push_back(sage_library_backend("sage", [] {}));
  // The fp8-PV kernels: sm89 tiles, and the sm90 (Hopper) build; Diffusers requires sm90 for
  // both.
  Backend fp8_cuda = sage_library_backend(
      "_sage_qk_int8_pv_fp8_cuda", [] { require_cuda("_sage_qk_int8_pv_fp8_cuda", 9, 0); },
      SagePath::fp8_pv_sm89);
  fp8_cuda.constraints = {check_device_cuda_atleast_sm<9, 0>, check_shape};
  table.push_back(std::move(fp8_cuda));
  Backend fp8_sm90 = sage_library_backend(
      "_sage_qk_int8_pv_fp8_cuda_sm90",
      [] { require_cuda("_sage_qk_int8_pv_fp8_cuda_sm90", 9, 0); }, SagePath::fp8_pv_sm90);
  fp8_sm90.constraints = {check_device_cuda_atleast_sm<9, 0>, check_shape};
  table.push_back(std::move(fp8_sm90));
  Backend fp16_cuda = sage_library_backend(
      "_sage_qk_int8_pv_fp16_cuda", [] { require_cuda("_sage_qk_int8_pv_fp16_cuda", 8, 0); });
  fp16_cuda.constraints = {check_device_cuda_atleast_sm<8, 0>, check_shape};
  table.push_back(std::move(fp16_cuda));
  table.push_back(xformers_backend());
}

}  // namespace kernelhub::attention::detail
