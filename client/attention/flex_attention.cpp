// flex_attention: tile by tile, online softmax (running max, sum and output per query row),
// empty tiles skipped, partial tiles masked, full tiles computed as they are.
#include "kernelhub/flex_attention.hpp"

#include <cmath>
#include <limits>
#include <mutex>

#include <ATen/Parallel.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/full.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/log.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include "client/attention/flex_tiles.hpp"

namespace kernelhub::attention {
namespace {

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

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
    (void)at::log(at::exp(probe));
  });
}

struct TileInputs {
  const at::Tensor& q;  // (B, H, Sq, D), accumulation type
  const at::Tensor& k;  // (B, H, Skv, D), GQA groups already expanded
  const at::Tensor& v;
  double scale;
  const BlockMask::State* mask;  // null: every tile full
  const ScoreMod* score_mod;     // null: scores as they are
};

// One block of query rows against every kv tile it needs; writes its rows of out and lse.
void attend_query_block(const TileInputs& in, int64_t qb, int64_t q0, int64_t q1, int64_t block,
                        const at::Tensor& out_rows, const at::Tensor& lse_rows) {
  const int64_t batch = in.q.size(0);
  const int64_t heads = in.q.size(1);
  const int64_t seq_kv = in.k.size(2);
  const at::Tensor q_tile = in.q.narrow(2, q0, q1 - q0);
  at::Tensor row_max = at::full({batch, heads, q1 - q0}, kMinusInf, in.q.options());
  at::Tensor row_sum = at::zeros({batch, heads, q1 - q0}, in.q.options());
  at::Tensor acc = at::zeros({batch, heads, q1 - q0, in.q.size(3)}, in.q.options());
  for (int64_t k0 = 0, kb = 0; k0 < seq_kv; k0 += block, ++kb) {
    const auto kind = in.mask ? in.mask->kind(qb, kb) : detail::TileKind::full;
    if (kind == detail::TileKind::empty) continue;  // the block sparsity
    const int64_t k1 = std::min(seq_kv, k0 + block);
    at::Tensor scores =
        at::matmul(q_tile, in.k.narrow(2, k0, k1 - k0).transpose(-2, -1)).mul_(in.scale);
    if (in.score_mod) {
      const auto tile = detail::make_tile(batch, heads, q0, q1, k0, k1, in.q.device());
      scores = (*in.score_mod)(scores, tile.b, tile.h, tile.q_idx, tile.kv_idx);
    }
    if (kind == detail::TileKind::partial) {
      scores.masked_fill_(in.mask->drop(qb, kb).to(scores.device()), kMinusInf);
    }
    // Online softmax: rescale what was accumulated to the new row maximum.
    const at::Tensor new_max = at::maximum(row_max, std::get<0>(scores.max(-1)));
    const at::Tensor safe_max = at::where(new_max.isinf(), at::zeros_like(new_max), new_max);
    const at::Tensor p = at::exp(scores.sub(safe_max.unsqueeze(-1)));
    const at::Tensor rescale = at::exp(row_max.sub(safe_max));
    row_sum = row_sum.mul(rescale).add(p.sum(-1));
    acc = acc.mul(rescale.unsqueeze(-1)).add(at::matmul(p, in.v.narrow(2, k0, k1 - k0)));
    row_max = new_max;
  }
  const at::Tensor attended = row_sum.gt(0);
  out_rows.copy_(
      at::where(attended.unsqueeze(-1), acc.div(row_sum.unsqueeze(-1)), at::zeros_like(acc)));
  lse_rows.copy_(
      at::where(attended, row_max.add(at::log(row_sum)), at::full_like(row_max, kMinusInf)));
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
  const at::Tensor q = query.transpose(1, 2).to(acc_type);  // (B, H, Sq, D)
  at::Tensor k = key.transpose(1, 2).to(acc_type);
  at::Tensor v = value.transpose(1, 2).to(acc_type);
  if (groups > 1) {
    k = k.repeat_interleave(groups, 1);
    v = v.repeat_interleave(groups, 1);
  }
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(query.size(3))));
  const BlockMask::State* mask = options.block_mask ? &options.block_mask->state() : nullptr;
  const int64_t block = mask ? mask->block : BlockMask::kDefaultBlock;

  at::Tensor out = at::zeros(q.sizes(), q.options());
  at::Tensor lse = at::full({batch, heads, seq_q}, kMinusInf, q.options());
  const TileInputs inputs{q, k, v, scale, mask, options.score_mod ? &*options.score_mod : nullptr};
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
    // Query blocks are independent: each runs on one thread, so its GEMMs run single-threaded
    // inside the parallel region. Left to itself, MKL picks a thread count per call from the
    // machine's load, and the fp32 result then changes from run to run (seen at ~8e-5).
    at::parallel_for(0, q_blocks, 1, attend_blocks);
  } else {
    attend_blocks(0, q_blocks);  // one stream: the device parallelises each tile
  }
  return {out.transpose(1, 2).to(query.scalar_type()), lse.to(at::kFloat)};
}

}  // namespace kernelhub::attention
