// BlockMask: the tile classification flex_attention skips by, built once.
#include <limits>

#include <ATen/ops/arange.h>
#include <ATen/ops/zeros.h>

#include "flex_tiles.hpp"

namespace kernelhub::attention {
namespace {

void check_sizes(int64_t batch, int64_t heads, int64_t seq_q, int64_t seq_kv, int64_t block) {
  if (batch <= 0 || heads <= 0 || seq_q <= 0 || seq_kv <= 0 || block <= 0) {
    throw InvalidInput(
        "BlockMask: batch, heads, sequence lengths and block size must be "
        "positive; got batch " +
        std::to_string(batch) + ", heads " + std::to_string(heads) + ", seq_q " +
        std::to_string(seq_q) + ", seq_kv " + std::to_string(seq_kv) + ", block " +
        std::to_string(block) + ".");
  }
}

// Classifies every tile by what `keep` says of it.
std::shared_ptr<BlockMask::State> classify(std::shared_ptr<BlockMask::State> state,
                                           c10::Device device) {
  auto& s = *state;
  s.q_blocks = (s.seq_q + s.block - 1) / s.block;
  s.kv_blocks = (s.seq_kv + s.block - 1) / s.block;
  s.kinds.reserve(static_cast<std::size_t>(s.q_blocks * s.kv_blocks));
  s.drops.reserve(s.kinds.capacity());
  for (int64_t qb = 0; qb < s.q_blocks; ++qb) {
    for (int64_t kb = 0; kb < s.kv_blocks; ++kb) {
      const auto tile =
          detail::make_tile(s.batch, s.heads, qb * s.block, std::min(s.seq_q, (qb + 1) * s.block),
                            kb * s.block, std::min(s.seq_kv, (kb + 1) * s.block), device);
      const at::Tensor keep = s.keep(tile);
      // all/any of a broadcastable tensor equal those of its expansion to the tile
      at::Tensor drop;
      if (keep.all().item<bool>()) {
        s.kinds.push_back(detail::TileKind::full);
      } else if (keep.any().item<bool>()) {
        s.kinds.push_back(detail::TileKind::partial);
        // Additive (0 or -inf): one vectorised add per use, cheaper than a broadcast masked_fill.
        drop = at::zeros(keep.sizes(), at::TensorOptions().dtype(at::kFloat).device(keep.device()))
                   .masked_fill_(keep.logical_not(), -std::numeric_limits<float>::infinity());
      } else {
        s.kinds.push_back(detail::TileKind::empty);
      }
      s.drops.push_back(std::move(drop));
    }
  }
  return state;
}

}  // namespace

at::Tensor BlockMask::State::keep(const detail::Tile& tile) const {
  if (mask_mod) {
    at::Tensor out = mask_mod(tile.b, tile.h, tile.q_idx, tile.kv_idx);
    if (out.scalar_type() != at::kBool) out = out.to(at::kBool);
    return out;
  }
  return dense.narrow(2, tile.q0, tile.q1 - tile.q0).narrow(3, tile.k0, tile.k1 - tile.k0);
}

BlockMask BlockMask::from_mask_mod(MaskMod mask_mod, int64_t batch, int64_t heads, int64_t seq_q,
                                   int64_t seq_kv, int64_t block_size) {
  check_sizes(batch, heads, seq_q, seq_kv, block_size);
  if (!mask_mod) throw InvalidInput("BlockMask::from_mask_mod: the mask_mod is empty.");
  auto state = std::make_shared<State>();
  *state = State{batch, heads, seq_q, seq_kv, block_size, 0, 0, {}, {}, std::move(mask_mod), {}};
  return BlockMask(classify(std::move(state), c10::Device(c10::kCPU)));
}

BlockMask BlockMask::from_bool_mask(const at::Tensor& mask, int64_t batch, int64_t heads,
                                    int64_t seq_q, int64_t seq_kv, int64_t block_size) {
  check_sizes(batch, heads, seq_q, seq_kv, block_size);
  if (mask.scalar_type() != at::kBool || mask.dim() > 4) {
    throw InvalidInput(
        "BlockMask::from_bool_mask takes a boolean mask of at most 4 dimensions "
        "broadcastable to (batch, heads, seq_q, seq_kv); an additive float mask "
        "is a score_mod.");
  }
  at::Tensor dense = mask;
  while (dense.dim() < 4) dense = dense.unsqueeze(0);
  try {
    dense = dense.expand({batch, heads, seq_q, seq_kv});
  } catch (const c10::Error&) {
    throw InvalidInput("BlockMask::from_bool_mask: a mask of shape " + std::to_string(mask.dim()) +
                       "-D does not broadcast to (" + std::to_string(batch) + ", " +
                       std::to_string(heads) + ", " + std::to_string(seq_q) + ", " +
                       std::to_string(seq_kv) + ").");
  }
  auto state = std::make_shared<State>();
  *state = State{batch, heads, seq_q, seq_kv, block_size, 0, 0, {}, {}, {}, dense};
  return BlockMask(classify(std::move(state), mask.device()));
}

int64_t BlockMask::seq_q() const { return state_->seq_q; }
int64_t BlockMask::seq_kv() const { return state_->seq_kv; }
int64_t BlockMask::block_size() const { return state_->block; }

double BlockMask::density() const {
  if (state_->kinds.empty()) return 0.0;
  std::size_t computed = 0;
  for (const auto kind : state_->kinds) computed += kind != detail::TileKind::empty ? 1 : 0;
  return static_cast<double>(computed) / static_cast<double>(state_->kinds.size());
}

}  // namespace kernelhub::attention

namespace kernelhub::attention::detail {

Tile make_tile(int64_t batch, int64_t heads, int64_t q0, int64_t q1, int64_t k0, int64_t k1,
               c10::Device device) {
  const auto options = at::TensorOptions().dtype(at::kLong).device(device);
  return Tile{q0,
              q1,
              k0,
              k1,
              at::arange(batch, options).view({batch, 1, 1, 1}),
              at::arange(heads, options).view({1, heads, 1, 1}),
              at::arange(q0, q1, options).view({1, 1, q1 - q0, 1}),
              at::arange(k0, k1, options).view({1, 1, 1, k1 - k0})};
}

}  // namespace kernelhub::attention::detail
