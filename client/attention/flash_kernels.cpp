#include "client/attention/flash_kernels.hpp"

#include <cmath>
#include <optional>

#include <ATen/ops/constant_pad_nd.h>

#include "client/attention/checks.hpp"
#include "client/attention/masks.hpp"

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

// A kernel's softmax_lse, checked to be (B, H, Sq): a build that returns none (or another
// layout) is refused rather than passed on.
at::Tensor checked_lse(const at::Tensor& lse, const AttentionInputs& inputs) {
  const auto& q = inputs.query;
  if (!lse.defined() || lse.dim() != 3 || lse.size(0) != q.size(0) || lse.size(1) != q.size(2) ||
      lse.size(2) != q.size(1)) {
    throw UnsupportedArgument(
        "this flash-attention kernel build returns no softmax_lse of shape (batch, heads, "
        "seq_len), so return_lse cannot be served by it. Use native or _native_flash for the "
        "lse, or a build of the kernel that returns it.");
  }
  return lse.to(at::kFloat);
}

}  // namespace

double softmax_scale(const AttentionInputs& inputs) {
  if (inputs.options.scale) return *inputs.options.scale;
  return 1.0 / std::sqrt(static_cast<double>(inputs.query.size(-1)));
}

namespace {

// FA2 `fwd`'s output (head dim unpadded) and its softmax_lse as the kernel returned it.
std::pair<at::Tensor, at::Tensor> flash2_outputs(const loader::KernelOp& fwd,
                                                 const AttentionInputs& inputs) {
  const int64_t d = inputs.query.size(-1);
  auto q = contiguous_last_dim(pad_head_dim(inputs.query, 8));
  auto k = contiguous_last_dim(pad_head_dim(inputs.key, 8));
  auto v = contiguous_last_dim(pad_head_dim(inputs.value, 8));
  // fwd(q, k, v, out_, alibi_slopes_, p_dropout, softmax_scale, is_causal,
  //     window_size_left, window_size_right, softcap, return_softmax, gen_) -> Tensor[]
  auto outputs = loader::output_tensors(fwd.call(
      {q, k, v, c10::IValue(), c10::IValue(), inputs.options.dropout_p, softmax_scale(inputs),
       inputs.options.is_causal, int64_t{-1}, int64_t{-1}, 0.0, false, c10::IValue()}));
  at::Tensor out = outputs.at(0);
  return {out.size(-1) == d ? out : out.narrow(-1, 0, d),
          outputs.size() > 1 ? outputs[1] : at::Tensor()};
}

// FA3 `fwd` in the batch layout: its output and softmax_lse.
std::pair<at::Tensor, at::Tensor> flash3_batch_outputs(const loader::KernelOp& fwd,
                                                       const AttentionInputs& inputs) {
  // -> (Tensor(out!), Tensor softmax_lse, Tensor out_accum, Tensor softmax_lse_accum)
  auto outputs = loader::output_tensors(fwd.call_named({{"q", contiguous_last_dim(inputs.query)},
                                                        {"k", contiguous_last_dim(inputs.key)},
                                                        {"v", contiguous_last_dim(inputs.value)},
                                                        {"softmax_scale", softmax_scale(inputs)},
                                                        {"is_causal", inputs.options.is_causal}}));
  return {outputs.at(0), outputs.size() > 1 ? outputs[1] : at::Tensor()};
}

}  // namespace

at::Tensor flash2_forward(const loader::KernelOp& fwd, const AttentionInputs& inputs) {
  return flash2_outputs(fwd, inputs).first;
}

AttentionWithLse flash2_forward_with_lse(const loader::KernelOp& fwd,
                                         const AttentionInputs& inputs) {
  auto [out, lse] = flash2_outputs(fwd, inputs);
  return {out, checked_lse(lse, inputs)};
}

at::Tensor flash2_varlen_forward(const loader::KernelOp& varlen_fwd,
                                 const AttentionInputs& inputs) {
  const int64_t d = inputs.query.size(-1);
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
  at::Tensor out = outputs.at(0);
  if (out.size(-1) != d) out = out.narrow(-1, 0, d);
  return unpack_varlen_output(out, pack);
}

AttentionWithLse flash3_forward_with_lse(const loader::KernelOp& fwd,
                                         const AttentionInputs& inputs) {
  auto [out, lse] = flash3_batch_outputs(fwd, inputs);
  return {out, checked_lse(lse, inputs)};
}

at::Tensor flash3_forward(const loader::KernelOp& fwd, const AttentionInputs& inputs, bool varlen) {
  if (!varlen) return flash3_batch_outputs(fwd, inputs).first;
  // FA3's fwd has a default for everything after v: pass what this call needs by name.
  const VarlenPack pack =
      pack_varlen(inputs.query, inputs.key, inputs.value, inputs.options.attn_mask);
  // -> (Tensor(out!), Tensor softmax_lse, Tensor out_accum, Tensor softmax_lse_accum)
  at::Tensor out = loader::output_tensors(fwd.call_named({{"q", contiguous_last_dim(pack.query)},
                                                          {"k", contiguous_last_dim(pack.key)},
                                                          {"v", contiguous_last_dim(pack.value)},
                                                          {"cu_seqlens_q", pack.cu_seqlens_q},
                                                          {"cu_seqlens_k", pack.cu_seqlens_k},
                                                          {"max_seqlen_q", pack.max_seqlen_q},
                                                          {"max_seqlen_k", pack.max_seqlen_k},
                                                          {"softmax_scale", softmax_scale(inputs)},
                                                          {"is_causal", inputs.options.is_causal}}))
                       .at(0);
  return unpack_varlen_output(out, pack);
}

Backend make_flash2_backend(std::string name, const std::shared_ptr<LazyOp>& op, bool varlen) {
  Backend backend;
  backend.name = std::move(name);
  backend.constraints = {check_device, check_qkv_dtype_bf16_or_fp16, check_shape};
  backend.honours = {
      .attn_mask = varlen, .dropout_p = true, .is_causal = true, .scale = true, .enable_gqa = true};
  backend.mask_refusal = "`attn_mask` is not supported for flash-attn 2.";
  backend.activate = [op] { op->activate(); };
  backend.run = [op, varlen](const AttentionInputs& inputs) {
    return varlen ? flash2_varlen_forward(op->op(), inputs) : flash2_forward(op->op(), inputs);
  };
  // Varlen kernels return the lse packed (H, total_q): not served yet.
  if (!varlen) {
    backend.run_with_lse = [op](const AttentionInputs& inputs) {
      return flash2_forward_with_lse(op->op(), inputs);
    };
  }
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
    return flash3_forward(op->op(), inputs, varlen);
  };
  if (!varlen) {
    backend.run_with_lse = [op](const AttentionInputs& inputs) {
      return flash3_forward_with_lse(op->op(), inputs);
    };
  }
  return backend;
}

}  // namespace kernelhub::attention::detail
