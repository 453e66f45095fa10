// The native family: ATen's scaled-dot-product attention and its fused kernels, on the
// (B, H, S, D) views of the dispatcher's (B, S, H, D) tensors. Constraints and honoured
// arguments follow Diffusers 0.42.1; where Diffusers silently drops an argument (is_causal
// on _native_npu, scale on _native_xla, ...), it is refused instead.
#include <limits>

#include <ATen/ops/_scaled_dot_product_attention_math.h>
#include <ATen/ops/_scaled_dot_product_cudnn_attention.h>
#include <ATen/ops/_scaled_dot_product_efficient_attention.h>
#include <ATen/ops/_scaled_dot_product_flash_attention.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scaled_dot_product_attention.h>

#include "flex_backend.hpp"
#include "kernelhub/attention/backend.hpp"
#include "kernelhub/attention/checks.hpp"
#include "kernelhub/attention/masks.hpp"
#include "kernelhub/attention/requirements.hpp"

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

// The heads-first views with the key/value heads repeated for kernels without enable_gqa.
struct HeadsFirst {
  at::Tensor q, k, v;
};
HeadsFirst heads_first_repeated(const AttentionInputs& in) {
  at::Tensor q = heads_first(in.query);
  return {q, repeat_kv_heads(heads_first(in.key), q.size(1)),
          repeat_kv_heads(heads_first(in.value), q.size(1))};
}

// A kernel's logsumexp as (B, H, Sq) float32: the efficient kernel pads Sq (to 32 on CUDA),
// cuDNN adds a trailing 1 (torch >= 2.9).
at::Tensor lse_rows(at::Tensor lse, int64_t seq_q) {
  if (lse.dim() == 4) lse = lse.squeeze(-1);
  if (lse.size(-1) != seq_q) lse = lse.narrow(-1, 0, seq_q);
  return lse.to(at::kFloat);
}

// The log-sum-exp of the scaled, masked scores, computed from them (the math kernel returns
// attention weights, not the lse): float32, or float64 for float64 inputs.
at::Tensor scores_lse(const AttentionInputs& in) {
  const auto& o = in.options;
  const auto dtype = in.query.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const HeadsFirst t = heads_first_repeated(in);
  at::Tensor scores =
      at::matmul(t.q.to(dtype), t.k.to(dtype).transpose(-2, -1)).mul_(softmax_scale(in));
  if (auto mask = sdpa_mask(o.attn_mask, in.query, in.key)) {
    scores = scores.add(additive_mask(*mask, dtype));
  }
  if (o.is_causal) {  // top-left aligned, as SDPA's is_causal
    const at::Tensor keep =
        at::ones({scores.size(-2), scores.size(-1)}, scores.options().dtype(at::kBool)).tril();
    scores = scores.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  }
  return at::logsumexp(scores, -1).to(at::kFloat);
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

AttentionWithLse math_with_lse(const AttentionInputs& in) { return {run_math(in), scores_lse(in)}; }

AttentionWithLse flash_with_lse(const AttentionInputs& in) {
  const auto& o = in.options;
  const HeadsFirst t = heads_first_repeated(in);
  if (t.q.is_cpu()) {
    if (o.dropout_p != 0.0) {
      throw UnsupportedArgument(
          "`dropout_p` is not supported by torch's CPU flash kernel (_native_flash on a CPU "
          "tensor). Pass dropout_p = 0, or use native or _native_math for dropout on CPU.");
    }
    auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(
        t.q, t.k, t.v, 0.0, o.is_causal, std::nullopt, o.scale);
    return {heads_first(out), lse_rows(lse, t.q.size(2))};
  }
  if (t.q.is_cuda()) {
    auto result = at::_scaled_dot_product_flash_attention(t.q, t.k, t.v, o.dropout_p, o.is_causal,
                                                          false, o.scale);
    return {heads_first(std::get<0>(result)), lse_rows(std::get<1>(result), t.q.size(2))};
  }
  throw InvalidInput("_native_flash runs on CPU and CUDA tensors; the query is on " +
                     t.q.device().str() + ". Use native for other devices.");
}

AttentionWithLse efficient_with_lse(const AttentionInputs& in) {
  const auto& o = in.options;
  const HeadsFirst t = heads_first_repeated(in);
  auto result = at::_scaled_dot_product_efficient_attention(
      t.q, t.k, t.v, fused_bias(in, t.q, t.k), true, o.dropout_p, o.is_causal, o.scale);
  return {heads_first(std::get<0>(result)), lse_rows(std::get<1>(result), t.q.size(2))};
}

AttentionWithLse cudnn_with_lse(const AttentionInputs& in) {
  const auto& o = in.options;
  const HeadsFirst t = heads_first_repeated(in);
  const at::Tensor q = t.q.contiguous();
  const at::Tensor k = t.k.contiguous();
  auto result = at::_scaled_dot_product_cudnn_attention(
      q, k, t.v.contiguous(), fused_bias(in, q, k), true, o.dropout_p, o.is_causal, false, o.scale);
  return {heads_first(std::get<0>(result)), lse_rows(std::get<1>(result), q.size(2))};
}

// native: SDPA returns no lse, so the kernel SDPA would pick on the device is called
// directly (CPU flash takes masks; CUDA's efficient kernel takes masks and dropout), and
// other devices compute it from the scores.
AttentionWithLse native_with_lse(const AttentionInputs& in) {
  const auto& o = in.options;
  if (in.query.is_cuda()) return efficient_with_lse(in);
  if (!in.query.is_cpu() || o.dropout_p != 0.0) return {run_native(in), scores_lse(in)};
  const HeadsFirst t = heads_first_repeated(in);
  std::optional<at::Tensor> mask = sdpa_mask(o.attn_mask, in.query, in.key);
  if (mask) mask = additive_mask(*mask, t.q.scalar_type());
  auto [out, lse] = at::_scaled_dot_product_flash_attention_for_cpu(t.q, t.k, t.v, 0.0, o.is_causal,
                                                                    mask, o.scale);
  return {heads_first(out), lse_rows(lse, t.q.size(2))};
}

constexpr Honours kEverything{
    .attn_mask = true, .dropout_p = true, .is_causal = true, .scale = true, .enable_gqa = true};

Backend make(std::string name, std::vector<Constraint> constraints, Honours honours,
             std::function<void()> activate, std::function<at::Tensor(const AttentionInputs&)> run,
             std::string mask_refusal = {},
             std::function<AttentionWithLse(const AttentionInputs&)> run_with_lse = {}) {
  return Backend{std::move(name),         std::move(constraints), honours,
                 std::move(mask_refusal), std::move(activate),    std::move(run),
                 std::move(run_with_lse)};
}

void nothing_to_activate() {}

}  // namespace

void register_native_backends(std::vector<Backend>& table) {
  table.push_back(make("native", {check_device, check_shape}, kEverything, nothing_to_activate,
                       run_native, {}, native_with_lse));
  table.push_back(make("_native_math", {check_device, check_shape}, kEverything,
                       nothing_to_activate, run_math, {}, math_with_lse));
  table.push_back(make("_native_flash", {check_device, check_qkv_dtype_bf16_or_fp16, check_shape},
                       {.dropout_p = true, .is_causal = true, .scale = true, .enable_gqa = true},
                       nothing_to_activate, run_flash,
                       "`attn_mask` is not supported for native flash attention", flash_with_lse));
  table.push_back(make(
      "_native_cudnn", {check_device, check_qkv_dtype_bf16_or_fp16, check_shape}, kEverything,
      [] { require_cuda("_native_cudnn"); }, run_cudnn, {}, cudnn_with_lse));
  table.push_back(make(
      "_native_efficient", {check_device, check_shape}, kEverything,
      [] { require_cuda("_native_efficient"); }, run_efficient, {}, efficient_with_lse));
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
  table.push_back(make("flex", {check_attn_mask_or_causal, check_device, check_shape},
                       {.attn_mask = true, .is_causal = true, .scale = true, .enable_gqa = true},
                       nothing_to_activate, run_flex, {}, run_flex_with_lse));
}

}  // namespace kernelhub::attention::detail
