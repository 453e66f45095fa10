// Attention-mask conversions shared by the backends: the SDPA reshape of 2-D padding masks,
// Diffusers' key-padding normalisation, additive masks, and varlen packing (cu_seqlens) for
// flash-style kernels. Masks are bool (true = attend) or additive float.
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

namespace kernelhub::attention::detail {

// For SDPA on (B, H, S, D) tensors: a 2-D (B, Skv) mask whose shape matches the batch and
// key length becomes (B, 1, 1, Skv); any other mask is passed as given (SDPA broadcasts).
// query/key are (B, S, H, D).
std::optional<at::Tensor> sdpa_mask(const std::optional<at::Tensor>& mask, const at::Tensor& query,
                                    const at::Tensor& key);

// Diffusers' _normalize_attn_mask: a bool mask of 1 to 4 dims -> bool (B, Skv) key-padding
// mask (query and head structure OR-reduced away). InvalidInput with Diffusers' texts.
at::Tensor normalize_key_padding_mask(const at::Tensor& mask, int64_t batch_size,
                                      int64_t seq_len_k);

// bool -> 0 where true, -inf where false; float -> cast. The shape is kept.
at::Tensor additive_mask(const at::Tensor& mask, at::ScalarType dtype);

// Packed (varlen) inputs for flash-style kernels. Queries are never unpadded; keys/values
// keep only the positions the mask marks valid, wherever they are (as Diffusers' hub varlen
// path does), so holes in a mask are honoured.
struct VarlenPack {
  at::Tensor query;         // (B*Sq, H, D)
  at::Tensor key;           // (total_k, Hkv, D)
  at::Tensor value;         // (total_k, Hkv, D)
  at::Tensor cu_seqlens_q;  // int32 (B+1)
  at::Tensor cu_seqlens_k;  // int32 (B+1)
  int64_t max_seqlen_q = 0;
  int64_t max_seqlen_k = 0;
  int64_t batch_size = 0;
  int64_t seq_len_q = 0;
};

// q (B, Sq, H, D), k/v (B, Skv, Hkv, D); without a mask every sequence is full length.
VarlenPack pack_varlen(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const std::optional<at::Tensor>& mask);

// A kernel's packed output (B*Sq, H, Dv) -> (B, Sq, H, Dv).
at::Tensor unpack_varlen_output(const at::Tensor& packed, const VarlenPack& pack);

}  // namespace kernelhub::attention::detail
