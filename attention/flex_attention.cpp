// flex_attention: tile by tile, online softmax (running max, sum and output per query row),
// empty tiles skipped, partial tiles masked, full tiles computed as they are.
#include "kernelhub/flex_attention.hpp"

#include <cmath>
#include <limits>
#include <mutex>

#include <ATen/Parallel.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/exp2.h>
#include <ATen/ops/full.h>
#include <ATen/ops/log.h>
#include <ATen/ops/log2.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/zeros.h>

#include "flex_tiles.hpp"

namespace kernelhub::attention {
namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
// The softmax runs in base 2, as flash attention kernels do: scores are scaled by log2(e)
// and exponentiated with exp2, which costs the same for every input, where ATen's exp on
// CPU is ~10x slower on -inf (every masked score) and ~90x slower where it underflows.
constexpr double kLog2e = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

void check_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                  const FlexOptions& options) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) {
    throw InvalidInput("flex_attention takes query (B, Sq, H, D) and key/value (B, Skv, Hkv, D).");
  }
  if (k.sizes() != v.sizes() || q.size(0) != k.size(0) || q.size(3) != k.size(3)) {
    throw InvalidInput(
        "flex_attention: query, key and value disagree on batch or head size, or "
        "key and value differ in shape.");
  }
  const int64_t hq = q.size(2);
  const int64_t hkv = k.size(2);
  if (hq != hkv && (!options.enable_gqa || hq % hkv != 0)) {
    throw InvalidInput("flex_attention: " + std::to_string(hq) + " query heads and " +
                       std::to_string(hkv) +
                       " key/value heads need enable_gqa, with the query heads a multiple of "
                       "the key/value heads.");
  }
  if (options.block_mask &&
      (options.block_mask->seq_q() != q.size(1) || options.block_mask->seq_kv() != k.size(1))) {
    throw InvalidInput("flex_attention: the block mask was built for " +
                       std::to_string(options.block_mask->seq_q()) + " x " +
                       std::to_string(options.block_mask->seq_kv()) + " but the inputs are " +
                       std::to_string(q.size(1)) + " x " + std::to_string(k.size(1)) +
                       ". Build it for these lengths.");
  }
}

// MKL's vector math (behind at::exp and at::log on CPU) initialises itself on its first call;
// when that first call comes from several threads at once, one of them can run a
// low-accuracy variant (~5e-5 relative, seen on one fresh process in ~15 under load). One
// call from a single thread before any parallel region settles it for the process.
void settle_vector_math_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    const at::Tensor probe = at::zeros({64}, at::TensorOptions().dtype(at::kFloat));
    (void)at::log2(at::exp2(at::log(at::exp(probe))));
  });
}

// (B, S, H, D) -> (B, H, S, D) in `type`. With batch 1 the transposed view is kept: each
// head's (S, D) matrix is then a strided GEMM operand, and no pass over the tensor is spent
// (it counts against sparse masks, whose tiles are few). Larger batches are made contiguous
// so that batch and heads fold into one bmm dimension.
at::Tensor heads_first(const at::Tensor& t, at::ScalarType type) {
  const at::Tensor view = t.transpose(1, 2).to(type);
  return t.size(0) == 1 ? view : view.contiguous();
}

struct TileInputs {
  // (B, H, Sq, D), accumulation type, already multiplied by the scale, and by log2(e) unless a
  // score_mod must see natural scores first.
  const at::Tensor& q;
  const at::Tensor& k;  // (B, H, Skv, D), GQA groups already expanded
  const at::Tensor& v;
  const BlockMask::State* mask;  // null: every tile full
  const ScoreMod* score_mod;     // null: scores as they are
};

// One block of query rows against every kv tile it needs; writes its rows of out and lse.
void attend_query_block(const TileInputs& in, int64_t qb, int64_t q0, int64_t q1, int64_t block,
                        const at::Tensor& out_rows, const at::Tensor& lse_rows) {
  const int64_t batch = in.q.size(0);
  const int64_t heads = in.q.size(1);
  const int64_t rows = q1 - q0;
  const int64_t head_dim = in.q.size(3);
  const int64_t seq_kv = in.k.size(2);
  // (B*H, rows, D) views of the (B, H, S, D) tensors (views for batch 1 or contiguous
  // tensors, see heads_first): the GEMMs run as bmm, the key tile transposed by the GEMM.
  const auto batched = [&](const at::Tensor& t, int64_t from, int64_t len) {
    return t.narrow(2, from, len).reshape({batch * heads, len, head_dim});
  };
  const at::Tensor q_tile = batched(in.q, q0, rows);
  at::Tensor row_max = at::full({batch * heads, rows}, kMinusInf, in.q.options());
  at::Tensor row_sum = at::zeros({batch * heads, rows}, in.q.options());
  at::Tensor acc = at::zeros({batch * heads, rows, head_dim}, in.q.options());
  for (int64_t k0 = 0, kb = 0; k0 < seq_kv; k0 += block, ++kb) {
    const auto kind = in.mask ? in.mask->kind(qb, kb) : detail::TileKind::full;
    if (kind == detail::TileKind::empty) continue;  // the block sparsity
    const int64_t k1 = std::min(seq_kv, k0 + block);
    const at::Tensor k_tile = batched(in.k, k0, k1 - k0).transpose(1, 2);
    at::Tensor scores = at::bmm(q_tile, k_tile).view({batch, heads, rows, k1 - k0});
    if (in.score_mod) {
      const auto tile = detail::make_tile(batch, heads, q0, q1, k0, k1, in.q.device());
      const at::Tensor modified = (*in.score_mod)(scores, tile.b, tile.h, tile.q_idx, tile.kv_idx);
      // What follows works in place: a result that broadcasts to the tile gets its own copy.
      scores = modified.sizes() == scores.sizes() && modified.is_contiguous()
                   ? modified
                   : modified.expand(scores.sizes()).contiguous();
      scores.mul_(kLog2e);
    }
    if (kind == detail::TileKind::partial) {
      scores.add_(in.mask->drop(qb, kb).to(scores.device()));
    }
    scores = scores.view({batch * heads, rows, k1 - k0});
    // Online softmax: rescale what was accumulated to the new row maximum, in place where
    // the tile owns the tensor (this runs once per computed tile).
    const at::Tensor new_max = at::maximum(row_max, scores.amax(-1));
    // A row with nothing attended yet has max -inf; any finite stand-in makes its p and its
    // rescale exp(-inf) = 0, as its scores are all -inf.
    const at::Tensor safe_max = new_max.clamp_min(std::numeric_limits<float>::lowest());
    const at::Tensor p = scores.sub_(safe_max.unsqueeze(-1)).exp2_();
    const at::Tensor rescale = row_max.sub(safe_max).exp2_();
    row_sum.mul_(rescale).add_(p.sum(-1));
    acc.mul_(rescale.unsqueeze(-1)).baddbmm_(p, batched(in.v, k0, k1 - k0));
    row_max = new_max;
  }
  // A row that attended nothing has acc 0, sum 0 and max -inf: output 0 and lse -inf, as
  // torch's flex gives, without a select (any attended row has a sum of at least 1).
  acc.div_(row_sum.clamp_min(std::numeric_limits<float>::min()).unsqueeze(-1));
  out_rows.copy_(acc.view({batch, heads, rows, head_dim}));
  lse_rows.copy_(row_max.add(row_sum.log2()).mul_(kLn2).view({batch, heads, rows}));
}

}  // namespace

AttentionWithLse flex_attention(const at::Tensor& query, const at::Tensor& key,
                                const at::Tensor& value, const FlexOptions& options) {
  check_inputs(query, key, value, options);
  const int64_t batch = query.size(0);
  const int64_t seq_q = query.size(1);
  const int64_t heads = query.size(2);
  const int64_t groups = heads / key.size(2);
  // Scores and accumulators in float32 (float64 stays float64).
  const auto acc_type = query.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(3))));
  // Scaled once here rather than once per tile.
  const at::Tensor q = heads_first(query, acc_type).mul(options.score_mod ? scale : scale * kLog2e);
  at::Tensor k = heads_first(key, acc_type);
  at::Tensor v = heads_first(value, acc_type);
  if (groups > 1) {
    k = k.repeat_interleave(groups, 1);
    v = v.repeat_interleave(groups, 1);
  }
  const BlockMask::State* mask = options.block_mask ? &options.block_mask->state() : nullptr;
  const int64_t block = mask ? mask->block : BlockMask::kDefaultBlock;

  // Every row of both is written by exactly one query block.
  at::Tensor out = at::empty(q.sizes(), q.options());
  at::Tensor lse = at::empty({batch, heads, seq_q}, q.options());
  const TileInputs inputs{q, k, v, mask, options.score_mod ? &*options.score_mod : nullptr};
  const int64_t q_blocks = (seq_q + block - 1) / block;
  const auto attend_blocks = [&](int64_t first, int64_t last) {
    for (int64_t qb = first; qb < last; ++qb) {
      const int64_t q0 = qb * block;
      const int64_t q1 = std::min(seq_q, q0 + block);
      attend_query_block(inputs, qb, q0, q1, block, out.narrow(2, q0, q1 - q0),
                         lse.narrow(2, q0, q1 - q0));
    }
  };
  if (q.is_cpu()) {
    settle_vector_math_once();
    // Query blocks are independent: one thread each, and inside the parallel region the
    // tile-sized ATen ops and GEMMs run single-threaded instead of each splitting its small
    // tile across threads.
    at::parallel_for(0, q_blocks, 1, attend_blocks);
  } else {
    attend_blocks(0, q_blocks);  // one stream: the device parallelises each tile
  }
  return {out.transpose(1, 2).to(query.scalar_type()), lse.to(at::kFloat)};
}

}  // namespace kernelhub::attention
