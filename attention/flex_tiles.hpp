// Internal to flex: one tile of the score matrix and the index tensors its mask and score
// functions see, and the block mask's state.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "kernelhub/flex_attention.hpp"

namespace kernelhub::attention::detail {

struct Tile {
  int64_t q0 = 0, q1 = 0, k0 = 0, k1 = 0;  // rows [q0, q1), columns [k0, k1)
  at::Tensor b, h, q_idx, kv_idx;          // broadcastable int64 indices (flex_attention.hpp)
};

// The tile [q0, q1) x [k0, k1) for `batch` x `heads`, indices on `device`.
Tile make_tile(int64_t batch, int64_t heads, int64_t q0, int64_t q1, int64_t k0, int64_t k1,
               c10::Device device);

enum class TileKind : uint8_t { empty, partial, full };

}  // namespace kernelhub::attention::detail

namespace kernelhub::attention {

struct BlockMask::State {
  int64_t batch = 0, heads = 0, seq_q = 0, seq_kv = 0, block = 0;
  int64_t q_blocks = 0, kv_blocks = 0;
  std::vector<detail::TileKind> kinds;  // q_blocks x kv_blocks, row-major
  // For each partial tile (undefined for the others): float32, -inf where its scores are
  // dropped and 0 elsewhere, computed once when the mask is built, broadcastable to
  // (B, H, Tq, Tk).
  std::vector<at::Tensor> drops;
  MaskMod mask_mod;  // set when built from a mask_mod
  at::Tensor dense;  // 4-D bool, set when built from a mask tensor

  detail::TileKind kind(int64_t q_block, int64_t kv_block) const {
    return kinds[static_cast<std::size_t>(q_block * kv_blocks + kv_block)];
  }
  const at::Tensor& drop(int64_t q_block, int64_t kv_block) const {
    return drops[static_cast<std::size_t>(q_block * kv_blocks + kv_block)];
  }
  // Where the tile's queries may attend: a bool tensor broadcastable to (B, H, Tq, Tk).
  at::Tensor keep(const detail::Tile& tile) const;
};

}  // namespace kernelhub::attention
