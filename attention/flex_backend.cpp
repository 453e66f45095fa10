// The dispatcher's `flex` backend: Diffusers' flex semantics over the C++ flex core
// (flex_attention.hpp). A boolean attn_mask becomes the block mask, as Diffusers turns it into
// a mask_mod; an additive float mask becomes a score modification, its -inf entries a block
// mask too, so tiles it empties are skipped. Unlike Diffusers, is_causal is honoured without a
// mask (Diffusers ignores it there) and together with one; dropout is refused, not dropped.
#include <map>
#include <mutex>
#include <utility>

#include <ATen/ops/arange.h>

#include "flex_backend.hpp"
#include "kernelhub/attention/backend.hpp"
#include "kernelhub/attention/masks.hpp"
#include "kernelhub/flex_attention.hpp"

namespace kernelhub::attention::detail {
namespace {

// Top-left aligned, as SDPA's is_causal and Diffusers' causal mask_mod (q_idx >= kv_idx).
at::Tensor causal_keep(int64_t seq_q, int64_t seq_kv, c10::Device device) {
  const auto options = at::TensorOptions().dtype(at::kLong).device(device);
  return at::arange(seq_q, options)
      .view({seq_q, 1})
      .ge(at::arange(seq_kv, options).view({1, seq_kv}));
}

// The causal block mask for these lengths, built once: classifying every tile costs about
// what a sparse call itself does, and a model asks for the same lengths layer after layer.
// Built for one batch and head (its tiles broadcast over all of them); at most a few
// length pairs are kept.
BlockMask causal_block_mask(int64_t seq_q, int64_t seq_kv) {
  static std::mutex mutex;
  static std::map<std::pair<int64_t, int64_t>, BlockMask> cache;
  constexpr std::size_t kKept = 8;
  const std::lock_guard lock(mutex);
  if (const auto it = cache.find({seq_q, seq_kv}); it != cache.end()) return it->second;
  const MaskMod causal = [](const at::Tensor&, const at::Tensor&, const at::Tensor& q,
                            const at::Tensor& kv) { return q.ge(kv); };
  if (cache.size() >= kKept) cache.clear();
  return cache
      .emplace(std::pair{seq_q, seq_kv}, BlockMask::from_mask_mod(causal, 1, 1, seq_q, seq_kv))
      .first->second;
}

FlexOptions flex_options(const AttentionInputs& in) {
  const auto& o = in.options;
  const int64_t batch = in.query.size(0);
  const int64_t seq_q = in.query.size(1);
  const int64_t heads = in.query.size(2);
  const int64_t seq_kv = in.key.size(1);
  FlexOptions flex;
  flex.scale = o.scale;
  flex.enable_gqa = o.enable_gqa;

  std::optional<at::Tensor> keep;  // bool, broadcastable to (B, H, Sq, Skv)
  std::optional<at::Tensor> bias;  // additive, the same
  if (auto mask = sdpa_mask(o.attn_mask, in.query, in.key)) {
    if (mask->scalar_type() == at::kBool) {
      keep = *mask;
    } else {
      bias = mask->to(in.query.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
      keep = bias->isneginf().logical_not();
    }
  }
  if (o.is_causal && !keep) {  // built tile by tile: no dense (Sq, Skv) mask
    flex.block_mask = causal_block_mask(seq_q, seq_kv);
    return flex;
  }
  if (o.is_causal) keep = keep->logical_and(causal_keep(seq_q, seq_kv, in.query.device()));
  if (keep) {  // from_bool_mask refuses a mask that does not broadcast, saying so
    flex.block_mask = BlockMask::from_bool_mask(*keep, batch, heads, seq_q, seq_kv);
  }
  if (bias) {
    at::Tensor full_bias = *bias;
    while (full_bias.dim() < 4) full_bias = full_bias.unsqueeze(0);
    full_bias = full_bias.expand({batch, heads, seq_q, seq_kv});
    flex.score_mod = [full_bias](const at::Tensor& score, const at::Tensor& b, const at::Tensor& h,
                                 const at::Tensor& q, const at::Tensor& kv) {
      return score.add(full_bias.index({b, h, q, kv}));
    };
  }
  return flex;
}

}  // namespace

at::Tensor run_flex(const AttentionInputs& in) { return run_flex_with_lse(in).out; }

AttentionWithLse run_flex_with_lse(const AttentionInputs& in) {
  return flex_attention(in.query, in.key, in.value, flex_options(in));
}

}  // namespace kernelhub::attention::detail
