#include "flash_kernels.hpp"

#include <optional>

#include <ATen/ops/constant_pad_nd.h>

#include "kernelhub/attention/checks.hpp"
#include "kernelhub/attention/masks.hpp"

namespace kernelhub::attention::detail {
namespace {

// The FA2 kernel requires head_dim % 8 == 0; its Python wrapper pads with zeros and slices
// the output, which leaves the result unchanged (zero columns add nothing to q.k, and the
// padded value columns are cut off).
at::Tensor pad_head_dim(const at::Tensor& t, int64_t multiple) {
  const int64_t d = t.size(-1);
  const int64_t padded = (d + multiple - 1) / multiple * multiple;
  if (padded == d) return t;
  return at::constant_pad_nd(t, {0, padded - d});
}

at::Tensor contiguous_last_dim(const at::Tensor& t) {
  return t.stride(-1) == 1 ? t : t.contiguous();
}

at::Tensor unpad_head_dim(const at::Tensor& out, int64_t d) {
  return out.size(-1) == d ? out : out.narrow(-1, 0, d);
}

// The second output of a kernel (softmax_lse), or undefined when the build returns none.
at::Tensor second(const std::vector<at::Tensor>& outputs) {
  return outputs.size() > 1 ? outputs[1] : at::Tensor();
}

// A varlen kernel's softmax_lse is packed (H, total_q); every query row is kept when packing
// (only keys are masked), so it unpacks to (B, H, Sq). Anything else is passed on to be checked.
at::Tensor unpack_varlen_lse(const at::Tensor& lse, const VarlenPack& pack) {
  if (!lse.defined() || lse.dim() != 2 || lse.size(1) != pack.batch_size * pack.seq_len_q)
    return lse;
  return lse.unflatten(1, {pack.batch_size, pack.seq_len_q}).transpose(0, 1);
}

// FA2 `fwd`: q (B,Sq,H,D), k/v (B,Skv,Hkv,D).
AttentionWithLse flash2_batch(const loader::KernelOp& fwd, const AttentionInputs& inputs) {
  auto q = contiguous_last_dim(pad_head_dim(inputs.query, 8));
  auto k = contiguous_last_dim(pad_head_dim(inputs.key, 8));
  auto v = contiguous_last_dim(pad_head_dim(inputs.value, 8));
  // fwd(q, k, v, out_, alibi_slopes_, p_dropout, softmax_scale, is_causal,
  //     window_size_left, window_size_right, softcap, return_softmax, gen_) -> Tensor[]
  auto outputs = loader::output_tensors(fwd.call(
      {q, k, v, c10::IValue(), c10::IValue(), inputs.options.dropout_p, softmax_scale(inputs),
       inputs.options.is_causal, int64_t{-1}, int64_t{-1}, 0.0, false, c10::IValue()}));
  return {unpad_head_dim(outputs.at(0), inputs.query.size(-1)), second(outputs)};
}

// FA2 `varlen_fwd` over the key-padding mask (valid keys at any positions); without a mask
// every sequence is full length.
AttentionWithLse flash2_varlen(const loader::KernelOp& varlen_fwd, const AttentionInputs& inputs) {
  VarlenPack pack = pack_varlen(inputs.query, inputs.key, inputs.value, inputs.options.attn_mask);
  auto q = contiguous_last_dim(pad_head_dim(pack.query, 8));
  auto k = contiguous_last_dim(pad_head_dim(pack.key, 8));
  auto v = contiguous_last_dim(pad_head_dim(pack.value, 8));
  // varlen_fwd(q, k, v, out_, cu_seqlens_q, cu_seqlens_k, seqused_k_, leftpad_k_,
  //   block_table_, alibi_slopes_, max_seqlen_q, max_seqlen_k, p_dropout, softmax_scale,
  //   zero_tensors, is_causal, window_size_left, window_size_right, softcap,
  //   return_softmax, gen_) -> Tensor[]
  auto outputs = loader::output_tensors(varlen_fwd.call({q,
                                                         k,
                                                         v,
                                                         c10::IValue(),
                                                         pack.cu_seqlens_q,
                                                         pack.cu_seqlens_k,
                                                         c10::IValue(),
                                                         c10::IValue(),
                                                         c10::IValue(),
                                                         c10::IValue(),
                                                         pack.max_seqlen_q,
                                                         pack.max_seqlen_k,
                                                         inputs.options.dropout_p,
                                                         softmax_scale(inputs),
                                                         false,
                                                         inputs.options.is_causal,
                                                         int64_t{-1},
                                                         int64_t{-1},
                                                         0.0,
                                                         false,
                                                         c10::IValue()}));
  at::Tensor out = unpad_head_dim(outputs.at(0), inputs.query.size(-1));
  return {unpack_varlen_output(out, pack), unpack_varlen_lse(second(outputs), pack)};
}

// FA3 `fwd`, batch layout, or packed with cu_seqlens when `varlen`. FA3's fwd has a default
// for everything after v: pass what this call needs by name.
AttentionWithLse flash3_forward(const loader::KernelOp& fwd, const AttentionInputs& inputs,
                                bool varlen) {
  std::vector<std::pair<std::string_view, c10::IValue>> arguments;
  std::optional<VarlenPack> pack;
  if (varlen) {
    pack = pack_varlen(inputs.query, inputs.key, inputs.value, inputs.options.attn_mask);
    arguments = {{"q", contiguous_last_dim(pack->query)}, {"k", contiguous_last_dim(pack->key)},
                 {"v", contiguous_last_dim(pack->value)}, {"cu_seqlens_q", pack->cu_seqlens_q},
                 {"cu_seqlens_k", pack->cu_seqlens_k},    {"max_seqlen_q", pack->max_seqlen_q},
                 {"max_seqlen_k", pack->max_seqlen_k}};
  } else {
    arguments = {{"q", contiguous_last_dim(inputs.query)},
                 {"k", contiguous_last_dim(inputs.key)},
                 {"v", contiguous_last_dim(inputs.value)}};
  }
  arguments.emplace_back("softmax_scale", softmax_scale(inputs));
  arguments.emplace_back("is_causal", inputs.options.is_causal);
  // -> (Tensor(out!), Tensor softmax_lse, Tensor out_accum, Tensor softmax_lse_accum)
  auto outputs = loader::output_tensors(fwd.call_named(std::move(arguments)));
  if (!pack) return {outputs.at(0), second(outputs)};
  return {unpack_varlen_output(outputs.at(0), *pack), unpack_varlen_lse(second(outputs), *pack)};
}

// A kernel's softmax_lse, checked to be (B, H, Sq): a build that returns none (or another
// layout) is refused rather than passed on.
AttentionWithLse checked(AttentionWithLse result, const AttentionInputs& inputs) {
  const auto& q = inputs.query;
  const at::Tensor& lse = result.lse;
  if (!lse.defined() || lse.dim() != 3 || lse.size(0) != q.size(0) || lse.size(1) != q.size(2) ||
      lse.size(2) != q.size(1)) {
    throw UnsupportedArgument(
        "this flash-attention kernel build returns no softmax_lse of shape (batch, heads, "
        "seq_len), so return_lse cannot be served by it. Use native or _native_flash for the "
        "lse, or a build of the kernel that returns it.");
  }
  result.lse = lse.to(at::kFloat);
  return result;
}

// flash_attn_func (`varlen` false) through FA2 `fwd`, or flash_attn_varlen_func through
// `varlen_fwd`. The lse is the kernel's softmax_lse as (B, H, Sq) where it returned one.
AttentionWithLse flash2_forward(const loader::KernelOp& op, const AttentionInputs& inputs,
                                bool varlen) {
  return varlen ? flash2_varlen(op, inputs) : flash2_batch(op, inputs);
}

}  // namespace

Backend make_flash2_backend(std::string name, const std::shared_ptr<LazyOp>& op, bool varlen) {
  Backend backend;
  backend.name = std::move(name);
  backend.constraints = {check_device, check_qkv_dtype_bf16_or_fp16, check_shape};
  backend.honours = {
      .attn_mask = varlen, .dropout_p = true, .is_causal = true, .scale = true, .enable_gqa = true};
  backend.mask_refusal = "`attn_mask` is not supported for flash-attn 2.";
  backend.activate = [op] { op->activate(); };
  backend.run = [op, varlen](const AttentionInputs& inputs) {
    return flash2_forward(op->op(), inputs, varlen).out;
  };
  backend.run_with_lse = [op, varlen](const AttentionInputs& inputs) {
    return checked(flash2_forward(op->op(), inputs, varlen), inputs);
  };
  return backend;
}

Backend make_flash3_backend(std::string name, const std::shared_ptr<LazyOp>& op, bool varlen) {
  Backend backend;
  backend.name = std::move(name);
  backend.constraints = {check_device, check_qkv_dtype_bf16_or_fp16, check_shape};
  // FA3 has no dropout: refused rather than dropped.
  backend.honours = {.attn_mask = varlen,
                     .dropout_p = false,
                     .is_causal = true,
                     .scale = true,
                     .enable_gqa = true};
  backend.mask_refusal = "`attn_mask` is not supported for flash-attn 3.";
  backend.activate = [op] { op->activate(); };
  backend.run = [op, varlen](const AttentionInputs& inputs) {
    return flash3_forward(op->op(), inputs, varlen).out;
  };
  backend.run_with_lse = [op, varlen](const AttentionInputs& inputs) {
    return checked(flash3_forward(op->op(), inputs, varlen), inputs);
  };
  return backend;
}

}  // namespace kernelhub::attention::detail
