// The native family: ATen's scaled-dot-product attention and its fused kernels, on the
// (B, H, S, D) views of the dispatcher's (B, S, H, D) tensors. Constraints and honoured
// arguments follow Diffusers 0.42.1; where Diffusers silently drops an argument (is_causal
// on _native_npu, scale on _native_xla, ...), it is refused instead.
#include <ATen/ops/_scaled_dot_product_attention_math.h>
#include <ATen/ops/_scaled_dot_product_cudnn_attention.h>
#include <ATen/ops/_scaled_dot_product_efficient_attention.h>
#include <ATen/ops/_scaled_dot_product_flash_attention.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/scaled_dot_product_attention.h>

#include "client/attention/backend.hpp"
#include "client/attention/checks.hpp"
#include "client/attention/masks.hpp"
#include "client/attention/requirements.hpp"

namespace kernelhub::attention::detail {
namespace {

at::Tensor heads_first(const at::Tensor& t) { return t.transpose(1, 2); }

// For kernels without enable_gqa: (B, Hkv, S, D) -> (B, Hq, S, D), each K/V head serving
// its group of consecutive query heads, as SDPA's enable_gqa does.
at::Tensor repeat_kv_heads(const at::Tensor& t, int64_t query_heads) {
  const int64_t groups = query_heads / t.size(1);
  return groups == 1 ? t : t.repeat_interleave(groups, 1);
}

// The fused CUDA kernels take an additive bias of the query dtype with the full
// (B, H, Sq, Skv) shape, its rows aligned to 16 elements; SDPA's own dispatcher prepares
// it this way before calling them.
std::optional<at::Tensor> fused_bias(const AttentionInputs& in, const at::Tensor& q,
                                     const at::Tensor& k) {
  auto mask = sdpa_mask(in.options.attn_mask, in.query, in.key);
  if (!mask) return std::nullopt;
  at::Tensor bias = additive_mask(*mask, q.scalar_type());
  const int64_t seq_k = k.size(2);
  if (bias.size(-1) % 16 != 0) {
    bias = at::constant_pad_nd(bias, {0, 16 - bias.size(-1) % 16}).narrow(-1, 0, seq_k);
  }
  return bias.expand({q.size(0), q.size(1), q.size(2), seq_k});
}

at::Tensor run_native(const AttentionInputs& in) {
  const auto& o = in.options;
  return heads_first(at::scaled_dot_product_attention(
      heads_first(in.query), heads_first(in.key), heads_first(in.value),
      sdpa_mask(o.attn_mask, in.query, in.key), o.dropout_p, o.is_causal, o.scale, o.enable_gqa));
}

at::Tensor run_math(const AttentionInputs& in) {
  const auto& o = in.options;
  // The math kernel adds the mask to the scores, so a boolean mask becomes 0 / -inf first
  // (SDPA's front end does the same).
  auto mask = sdpa_mask(o.attn_mask, in.query, in.key);
  if (mask && mask->scalar_type() == at::kBool) {
    mask = additive_mask(*mask, in.query.scalar_type());
  }
  return heads_first(std::get<0>(at::_scaled_dot_product_attention_math(
      heads_first(in.query), heads_first(in.key), heads_first(in.value), mask, o.dropout_p,
      o.is_causal, std::nullopt, o.scale, o.enable_gqa)));
}

at::Tensor run_flash(const AttentionInputs& in) {
  const auto& o = in.options;
  at::Tensor q = heads_first(in.query);
  at::Tensor k = repeat_kv_heads(heads_first(in.key), q.size(1));
  at::Tensor v = repeat_kv_heads(heads_first(in.value), q.size(1));
  if (q.is_cpu()) {
    if (o.dropout_p != 0.0) {
      throw UnsupportedArgument(
          "`dropout_p` is not supported by torch's CPU flash kernel (_native_flash on a CPU "
          "tensor). Pass dropout_p = 0, or use native or _native_math for dropout on CPU.");
    }
    return heads_first(std::get<0>(at::_scaled_dot_product_flash_attention_for_cpu(
        q, k, v, o.dropout_p, o.is_causal, std::nullopt, o.scale)));
  }
  if (q.is_cuda()) {
    return heads_first(std::get<0>(at::_scaled_dot_product_flash_attention(
        q, k, v, o.dropout_p, o.is_causal, false, o.scale)));
  }
  throw InvalidInput("_native_flash runs on CPU and CUDA tensors; the query is on " +
                     q.device().str() + ". Use native for other devices.");
}

at::Tensor run_cudnn(const AttentionInputs& in) {
  const auto& o = in.options;
  // Diffusers makes the (B, H, S, D) views contiguous for cuDNN.
  at::Tensor q = heads_first(in.query).contiguous();
  at::Tensor k = repeat_kv_heads(heads_first(in.key), q.size(1)).contiguous();
  at::Tensor v = repeat_kv_heads(heads_first(in.value), q.size(1)).contiguous();
  return heads_first(std::get<0>(at::_scaled_dot_product_cudnn_attention(
      q, k, v, fused_bias(in, q, k), false, o.dropout_p, o.is_causal, false, o.scale)));
}

at::Tensor run_efficient(const AttentionInputs& in) {
  const auto& o = in.options;
  at::Tensor q = heads_first(in.query);
  at::Tensor k = repeat_kv_heads(heads_first(in.key), q.size(1));
  at::Tensor v = repeat_kv_heads(heads_first(in.value), q.size(1));
  return heads_first(std::get<0>(at::_scaled_dot_product_efficient_attention(
      q, k, v, fused_bias(in, q, k), false, o.dropout_p, o.is_causal, o.scale)));
}

// On an NPU or XLA device SDPA dispatches to that device's fused kernel.
at::Tensor run_device_sdpa(const AttentionInputs& in) {
  const auto& o = in.options;
  return heads_first(at::scaled_dot_product_attention(
      heads_first(in.query), heads_first(in.key), heads_first(in.value),
      sdpa_mask(o.attn_mask, in.query, in.key), o.dropout_p, o.is_causal, o.scale, false));
}

[[noreturn]] at::Tensor never_runs(const AttentionInputs&) {
  throw BackendUnavailable("flex cannot run in a C++ process (its activation refuses).");
}

constexpr Honours kEverything{
    .attn_mask = true, .dropout_p = true, .is_causal = true, .scale = true, .enable_gqa = true};

Backend make(std::string name, std::vector<Constraint> constraints, Honours honours,
             std::function<void()> activate, std::function<at::Tensor(const AttentionInputs&)> run,
             std::string mask_refusal = {}) {
  return Backend{std::move(name),         std::move(constraints), honours,
                 std::move(mask_refusal), std::move(activate),    std::move(run)};
}

void nothing_to_activate() {}

}  // namespace

void register_native_backends(std::vector<Backend>& table) {
  table.push_back(
      make("native", {check_device, check_shape}, kEverything, nothing_to_activate, run_native));
  table.push_back(make("_native_math", {check_device, check_shape}, kEverything,
                       nothing_to_activate, run_math));
  table.push_back(make("_native_flash", {check_device, check_qkv_dtype_bf16_or_fp16, check_shape},
                       {.dropout_p = true, .is_causal = true, .scale = true, .enable_gqa = true},
                       nothing_to_activate, run_flash,
                       "`attn_mask` is not supported for native flash attention"));
  table.push_back(make(
      "_native_cudnn", {check_device, check_qkv_dtype_bf16_or_fp16, check_shape}, kEverything,
      [] { require_cuda("_native_cudnn"); }, run_cudnn));
  table.push_back(make(
      "_native_efficient", {check_device, check_shape}, kEverything,
      [] { require_cuda("_native_efficient"); }, run_efficient));
  // torch_npu's fusion attention takes a mask, dropout and scale; Diffusers drops is_causal.
  table.push_back(make(
      "_native_npu", {check_device, check_qkv_dtype_bf16_or_fp16, check_shape},
      {.attn_mask = true, .dropout_p = true, .scale = true}, [] { require_npu("_native_npu"); },
      run_device_sdpa));
  // torch_xla's flash_attention: causal only, the default scale.
  table.push_back(make(
      "_native_xla", {check_device, check_shape}, {.is_causal = true},
      [] { require_xla("_native_xla"); }, run_device_sdpa,
      "`attn_mask` is not supported for XLA attention"));
  table.push_back(make(
      "flex", {check_attn_mask_or_causal, check_device, check_shape},
      {.attn_mask = true, .is_causal = true, .scale = true, .enable_gqa = true},
      [] {
        throw BackendUnavailable(
            "flex cannot run in a C++ process: flex attention is generated by torch.compile "
            "(Inductor's Triton/C++ templates) from Python score_mod/mask_mod functions, and "
            "libtorch has no such compiler. Use native (masks, is_causal, GQA) or _native_flash "
            "instead.");
      },
      never_runs));
}

}  // namespace kernelhub::attention::detail
