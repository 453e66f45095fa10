// Inputs and the independent reference for the dispatcher tests: ATen's
// scaled_dot_product_attention on (B, H, S, D) permutes, in float64, with the key/value heads
// repeated by hand, causality as an explicit mask and masks given in 4-D. No dispatcher code
// is involved, so a wrong reshape, scale or head mapping in a backend shows up as a diff.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/scaled_dot_product_attention.h>

namespace kernelhub::testing {

struct Qkv {
  at::Tensor q, k, v;  // (B, S, H, D)
};

inline at::Generator seeded(uint64_t seed) {
  return at::make_generator<at::CPUGeneratorImpl>(seed);
}

inline Qkv random_qkv(int64_t batch, int64_t seq_q, int64_t seq_kv, int64_t heads_q,
                      int64_t heads_kv, int64_t head_dim, at::ScalarType dtype,
                      uint64_t seed = 1234) {
  auto gen = seeded(seed);
  auto options = at::TensorOptions().dtype(at::kFloat);
  return {at::randn({batch, seq_q, heads_q, head_dim}, gen, options).to(dtype),
          at::randn({batch, seq_kv, heads_kv, head_dim}, gen, options).to(dtype),
          at::randn({batch, seq_kv, heads_kv, head_dim}, gen, options).to(dtype)};
}

// A random boolean mask of `sizes` with at least one attended key per row (a row with none
// is NaN in SDPA).
inline at::Tensor random_bool_mask(at::IntArrayRef sizes, uint64_t seed = 99) {
  auto gen = seeded(seed);
  at::Tensor mask = at::rand(sizes, gen).gt(0.4);
  mask.select(-1, 0).fill_(true);
  return mask;
}

struct Reference {
  std::optional<at::Tensor> mask4d =
      std::nullopt;     // broadcastable to (B, H, Sq, Skv); bool or additive
  bool causal = false;  // top-left aligned, as SDPA's is_causal
  std::optional<double> scale = std::nullopt;
};

// (B, Sq, H, D) in float64.
inline at::Tensor reference_attention(const Qkv& in, const Reference& ref = {}) {
  at::Tensor q = in.q.to(at::kDouble).permute({0, 2, 1, 3});
  at::Tensor k = in.k.to(at::kDouble).permute({0, 2, 1, 3});
  at::Tensor v = in.v.to(at::kDouble).permute({0, 2, 1, 3});
  const int64_t groups = q.size(1) / k.size(1);
  k = k.repeat_interleave(groups, 1);
  v = v.repeat_interleave(groups, 1);
  std::optional<at::Tensor> mask;
  if (ref.mask4d) {
    mask = ref.mask4d->scalar_type() == at::kBool ? *ref.mask4d : ref.mask4d->to(at::kDouble);
  }
  if (ref.causal) {
    mask = at::ones({q.size(2), k.size(2)}, at::TensorOptions().dtype(at::kBool)).tril();
  }
  return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false, ref.scale)
      .permute({0, 2, 1, 3});
}

// The log-sum-exp of each query row's scaled, masked scores, (B, H, Sq) in float64: what
// return_lse must give.
inline at::Tensor reference_lse(const Qkv& in, const Reference& ref = {}) {
  at::Tensor q = in.q.to(at::kDouble).permute({0, 2, 1, 3});
  at::Tensor k = in.k.to(at::kDouble).permute({0, 2, 1, 3});
  k = k.repeat_interleave(q.size(1) / k.size(1), 1);
  const double scale = ref.scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)).mul(scale);
  const double minus_inf = -std::numeric_limits<double>::infinity();
  if (ref.mask4d) {
    scores = ref.mask4d->scalar_type() == at::kBool
                 ? scores.masked_fill(ref.mask4d->logical_not(), minus_inf)
                 : scores.add(ref.mask4d->to(at::kDouble));
  }
  if (ref.causal) {
    const at::Tensor keep =
        at::ones({q.size(2), k.size(2)}, at::TensorOptions().dtype(at::kBool)).tril();
    scores = scores.masked_fill(keep.logical_not(), minus_inf);
  }
  return at::logsumexp(scores, -1);
}

inline double max_abs_diff(const at::Tensor& actual, const at::Tensor& expected) {
  return actual.to(at::kDouble).sub(expected.to(at::kDouble)).abs().max().item<double>();
}

}  // namespace kernelhub::testing
