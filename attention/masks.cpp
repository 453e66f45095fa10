#include "kernelhub/attention/masks.hpp"

#include <limits>
#include <sstream>
#include <string>

#include <ATen/ops/arange.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>

#include "kernelhub/attention_dispatch.hpp"

namespace kernelhub::attention::detail {
namespace {

// Python spellings, so the texts Diffusers raises read the same here.
std::string python_dtype(at::ScalarType dtype) {
  return "torch." + std::string(c10::getDtypeNames(dtype).first);
}

std::string python_shape(at::IntArrayRef sizes) {
  std::ostringstream out;
  out << "torch.Size([";
  for (size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << "])";
  return out.str();
}

void check_batch(const at::Tensor& mask, int64_t batch_size, int dims) {
  if (mask.size(0) != 1 && mask.size(0) != batch_size) {
    throw InvalidInput("attn_mask.shape[0] (" + std::to_string(mask.size(0)) + ") must be 1 or " +
                       std::to_string(batch_size) + " for " + std::to_string(dims) +
                       "D attention mask.");
  }
}

}  // namespace

std::optional<at::Tensor> sdpa_mask(const std::optional<at::Tensor>& mask, const at::Tensor& query,
                                    const at::Tensor& key) {
  if (!mask) return std::nullopt;
  if (mask->dim() == 2 && mask->size(0) == query.size(0) && mask->size(1) == key.size(1)) {
    return mask->view({mask->size(0), 1, 1, mask->size(1)});
  }
  return mask;
}

at::Tensor normalize_key_padding_mask(const at::Tensor& mask, int64_t batch_size,
                                      int64_t seq_len_k) {
  if (mask.scalar_type() != at::kBool) {
    throw InvalidInput("Attention mask must be of type bool, got " +
                       python_dtype(mask.scalar_type()) + ".");
  }
  at::Tensor normalized;
  switch (mask.dim()) {
    case 1:
      normalized = mask.unsqueeze(0).expand({batch_size, seq_len_k});
      break;
    case 2:
      check_batch(mask, batch_size, 2);
      normalized = mask.expand({batch_size, seq_len_k});
      break;
    case 3:
      check_batch(mask, batch_size, 3);
      normalized = mask.any(1).expand({batch_size, seq_len_k});
      break;
    case 4:
      check_batch(mask, batch_size, 4);
      normalized = mask.expand({batch_size, -1, -1, seq_len_k}).any(2).any(1);
      break;
    default:
      throw InvalidInput("Unsupported attention mask shape: " + python_shape(mask.sizes()));
  }
  if (normalized.size(0) != batch_size || normalized.size(1) != seq_len_k) {
    throw InvalidInput("Normalized attention mask shape mismatch: got " +
                       python_shape(normalized.sizes()) + ", expected (" +
                       std::to_string(batch_size) + ", " + std::to_string(seq_len_k) + ")");
  }
  return normalized;
}

at::Tensor additive_mask(const at::Tensor& mask, at::ScalarType dtype) {
  if (mask.scalar_type() != at::kBool) return mask.to(dtype);
  at::Tensor zeros = at::full_like(mask, 0.0, mask.options().dtype(dtype));
  at::Tensor minus_inf =
      at::full_like(mask, -std::numeric_limits<double>::infinity(), mask.options().dtype(dtype));
  return at::where(mask, zeros, minus_inf);
}

VarlenPack pack_varlen(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const std::optional<at::Tensor>& mask) {
  const int64_t batch = query.size(0);
  const int64_t seq_q = query.size(1);
  const int64_t seq_k = key.size(1);
  const auto int32 = query.options().dtype(at::kInt);

  VarlenPack pack;
  pack.batch_size = batch;
  pack.seq_len_q = seq_q;
  pack.query = query.flatten(0, 1);
  pack.cu_seqlens_q = at::arange(0, batch + 1, int32).mul_(seq_q);
  pack.max_seqlen_q = seq_q;
  if (!mask) {
    pack.key = key.flatten(0, 1);
    pack.value = value.flatten(0, 1);
    pack.cu_seqlens_k = at::arange(0, batch + 1, int32).mul_(seq_k);
    pack.max_seqlen_k = seq_k;
    return pack;
  }
  const at::Tensor valid = normalize_key_padding_mask(mask->to(key.device()), batch, seq_k);
  const at::Tensor seqlens_k = valid.sum(1, /*keepdim=*/false, at::kInt);
  pack.cu_seqlens_k = at::zeros({batch + 1}, int32);
  pack.cu_seqlens_k.narrow(0, 1, batch).copy_(seqlens_k.cumsum(0, at::kInt));
  pack.max_seqlen_k = seqlens_k.max().item<int64_t>();
  // Flat indices of the valid keys, batch-major: each sequence's keys stay contiguous and in
  // order, which is what cu_seqlens_k describes.
  const at::Tensor indices = valid.flatten().nonzero().flatten();
  pack.key = key.flatten(0, 1).index_select(0, indices);
  pack.value = value.flatten(0, 1).index_select(0, indices);
  return pack;
}

at::Tensor unpack_varlen_output(const at::Tensor& packed, const VarlenPack& pack) {
  return packed.unflatten(0, {pack.batch_size, pack.seq_len_q});
}

}  // namespace kernelhub::attention::detail
