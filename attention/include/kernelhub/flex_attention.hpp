// FlexAttention's semantics without Python: a mask and a score modification given as C++
// functions, and block sparsity that skips whole tiles. Everything works on tiles: the
// functions receive index tensors that broadcast over a tile of scores and return a tensor of
// the tile's shape (or one that broadcasts to it), so they run as a few ATen ops per tile,
// never per element.
//
//   namespace ka = kernelhub::attention;
//   ka::MaskMod causal = [](const at::Tensor&, const at::Tensor&, const at::Tensor& q,
//                           const at::Tensor& kv) { return q.ge(kv); };
//   auto mask = ka::BlockMask::from_mask_mod(causal, batch, heads, seq_q, seq_kv);
//   auto [out, lse] = ka::flex_attention(q, k, v, {.block_mask = mask});
//
// Tensors are in the dispatcher's layout: query (B, Sq, H, D), key/value (B, Skv, Hkv, D).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include <ATen/core/Tensor.h>

#include "kernelhub/attention_dispatch.hpp"

namespace kernelhub::attention {

// b (B,1,1,1), h (1,H,1,1), q_idx (1,1,Tq,1), kv_idx (1,1,1,Tk), int64, on the query's device.
// Returns true where the query may attend to the key.
using MaskMod = std::function<at::Tensor(const at::Tensor& b, const at::Tensor& h,
                                         const at::Tensor& q_idx, const at::Tensor& kv_idx)>;
// The tile's scaled scores (B, H, Tq, Tk), float32, and the same indices; returns the new
// scores (e.g. score + bias, or a soft cap): `score` itself or a new tensor, which flex then
// modifies in place (never return a tensor the caller keeps). Tiles run in parallel, so both
// kinds of function must be safe to call from several threads at once.
using ScoreMod =
    std::function<at::Tensor(const at::Tensor& score, const at::Tensor& b, const at::Tensor& h,
                             const at::Tensor& q_idx, const at::Tensor& kv_idx)>;

// Which tiles of the (Sq, Skv) score matrix are empty (skipped), full (no mask applied) or
// partial (masked element by element), built once and reused across calls and layers.
class BlockMask {
 public:
  static constexpr int64_t kDefaultBlock = 128;
  // Evaluates `mask_mod` once over every tile, for every batch and head it depends on.
  static BlockMask from_mask_mod(MaskMod mask_mod, int64_t batch, int64_t heads, int64_t seq_q,
                                 int64_t seq_kv, int64_t block_size = kDefaultBlock);
  // A boolean mask broadcastable to (B, H, Sq, Skv), true = attend (what Diffusers turns into
  // a mask_mod).
  static BlockMask from_bool_mask(const at::Tensor& mask, int64_t batch, int64_t heads,
                                  int64_t seq_q, int64_t seq_kv,
                                  int64_t block_size = kDefaultBlock);

  int64_t seq_q() const;
  int64_t seq_kv() const;
  int64_t block_size() const;
  // Fraction of tiles that are computed (partial or full), for reports and benchmarks.
  double density() const;

  struct State;
  const State& state() const { return *state_; }

 private:
  explicit BlockMask(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

struct FlexOptions {
  std::optional<BlockMask> block_mask;  // none: every key for every query
  std::optional<ScoreMod> score_mod;
  std::optional<double> scale;  // default 1/sqrt(head_dim)
  bool enable_gqa = false;      // key/value heads shared by groups of query heads
};

// Tile by tile with an online softmax (the full score matrix never exists). Returns the
// output (B, Sq, H, D) in the query's dtype and lse (B, H, Sq) float32; a query row with no
// key to attend gets output 0 and lse -inf, as torch's flex_attention gives.
AttentionWithLse flex_attention(const at::Tensor& query, const at::Tensor& key,
                                const at::Tensor& value, const FlexOptions& options = {});

}  // namespace kernelhub::attention
