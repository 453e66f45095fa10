// flex_attention (C++): block masks from mask_mods and boolean masks, score_mods, GQA and
// head sizes 64/128, against the float64 reference with the same mask made dense; tiles that
// the mask empties are skipped (density), and rows with nothing to attend give 0 and -inf.
#include <limits>
#include <string>
#include <vector>

#include <ATen/ops/arange.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include "attention/native_reference.hpp"
#include "kernelhub/attention_dispatch.hpp"
#include "kernelhub/flex_attention.hpp"

// After the torch headers: c10 defines a glog-style CHECK that Catch2's must replace.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using namespace kernelhub::testing;

namespace {

// The mask_mod evaluated over the whole (B, H, Sq, Skv) matrix, for the reference.
at::Tensor dense_mask(const ka::MaskMod& mask_mod, int64_t b, int64_t h, int64_t sq, int64_t skv) {
  const auto options = at::TensorOptions().dtype(at::kLong);
  return mask_mod(at::arange(b, options).view({b, 1, 1, 1}),
                  at::arange(h, options).view({1, h, 1, 1}),
                  at::arange(sq, options).view({1, 1, sq, 1}),
                  at::arange(skv, options).view({1, 1, 1, skv}))
      .expand({b, h, sq, skv});
}

ka::MaskMod causal() {
  return [](const at::Tensor&, const at::Tensor&, const at::Tensor& q, const at::Tensor& kv) {
    return q.ge(kv);
  };
}

ka::MaskMod sliding_window(int64_t window) {
  return [window](const at::Tensor&, const at::Tensor&, const at::Tensor& q, const at::Tensor& kv) {
    return q.ge(kv).logical_and(q.sub(kv).lt(window));
  };
}

// Documents packed in one sequence: tokens attend within their document only.
ka::MaskMod documents(const at::Tensor& doc_of_token) {
  return [doc_of_token](const at::Tensor&, const at::Tensor&, const at::Tensor& q,
                        const at::Tensor& kv) {
    return doc_of_token.index_select(0, q.flatten())
        .view(q.sizes())
        .eq(doc_of_token.index_select(0, kv.flatten()).view(kv.sizes()));
  };
}

ka::MaskMod prefix_lm(int64_t prefix) {
  return [prefix](const at::Tensor&, const at::Tensor&, const at::Tensor& q, const at::Tensor& kv) {
    return kv.lt(prefix).logical_or(q.ge(kv));
  };
}

}  // namespace

TEST_CASE("flex_attention equals the float64 reference for each mask family", "[attention][flex]") {
  const int64_t seq = 300;  // not a multiple of the block: ragged edge tiles
  at::Tensor docs = at::zeros({seq}, at::TensorOptions().dtype(at::kLong));
  docs.narrow(0, 70, 130).fill_(1);
  docs.narrow(0, 200, 100).fill_(2);
  struct Case {
    std::string name;
    ka::MaskMod mask_mod;
  };
  const std::vector<Case> cases = {{"causal", causal()},
                                   {"sliding window 32", sliding_window(32)},
                                   {"documents", documents(docs)},
                                   {"prefix-LM 40", prefix_lm(40)}};
  for (const int64_t head_dim : {64, 128}) {
    for (const auto& c : cases) {
      for (const int64_t block : {64, 128}) {
        INFO(c.name << ", head_dim " << head_dim << ", block " << block);
        const Qkv in = random_qkv(2, seq, seq, 4, 2, head_dim, at::kFloat);
        ka::FlexOptions options;
        options.block_mask = ka::BlockMask::from_mask_mod(c.mask_mod, 2, 4, seq, seq, block);
        options.enable_gqa = true;
        const auto result = ka::flex_attention(in.q, in.k, in.v, options);
        const Reference ref{dense_mask(c.mask_mod, 2, 4, seq, seq), false, std::nullopt};
        CHECK(max_abs_diff(result.out, reference_attention(in, ref)) < 1e-5);
        CHECK(max_abs_diff(result.lse, reference_lse(in, ref)) < 1e-5);
        CHECK(options.block_mask->density() < 1.0);  // some tiles are skipped
      }
    }
  }
}

TEST_CASE("flex_attention: an additive bias as a score_mod, a boolean mask, a scale",
          "[attention][flex]") {
  const Qkv in = random_qkv(1, 150, 170, 2, 2, 64, at::kFloat);
  const at::Tensor bias = at::randn({1, 2, 150, 170}, seeded(3)).to(at::kFloat);
  ka::FlexOptions options;
  options.score_mod = [bias](const at::Tensor& score, const at::Tensor& b, const at::Tensor& h,
                             const at::Tensor& q, const at::Tensor& kv) {
    return score.add(bias.index({b, h, q, kv}));
  };
  options.scale = 0.2;
  const at::Tensor keep = random_bool_mask({1, 1, 150, 170});
  options.block_mask = ka::BlockMask::from_bool_mask(keep, 1, 2, 150, 170, 64);
  const auto result = ka::flex_attention(in.q, in.k, in.v, options);
  const at::Tensor additive =
      bias.to(at::kDouble)
          .masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  const Reference ref{additive, false, 0.2};
  CHECK(max_abs_diff(result.out, reference_attention(in, ref)) < 1e-5);
  CHECK(max_abs_diff(result.lse, reference_lse(in, ref)) < 1e-5);
}

TEST_CASE("flex_attention: skipped tiles, and rows with nothing to attend", "[attention][flex]") {
  const int64_t seq = 1024;
  const auto causal_mask = ka::BlockMask::from_mask_mod(causal(), 1, 1, seq, seq);
  CHECK(causal_mask.density() == Approx(36.0 / 64.0));  // 8 x 8 tiles, the upper 28 skipped
  const auto window = ka::BlockMask::from_mask_mod(sliding_window(128), 1, 1, seq, seq);
  CHECK(window.density() == Approx(15.0 / 64.0));  // the diagonal and the one below it

  // Query rows 0..9 may attend nothing: output 0 and lse -inf, as torch's flex gives.
  const ka::MaskMod late = [](const at::Tensor&, const at::Tensor&, const at::Tensor& q,
                              const at::Tensor& kv) { return q.ge(10).logical_and(q.ge(kv)); };
  const Qkv in = random_qkv(1, 20, 20, 1, 1, 8, at::kFloat);
  ka::FlexOptions options;
  options.block_mask = ka::BlockMask::from_mask_mod(late, 1, 1, 20, 20, 8);
  const auto result = ka::flex_attention(in.q, in.k, in.v, options);
  CHECK(result.out.narrow(1, 0, 10).abs().max().item<double>() == 0.0);
  CHECK(result.lse.narrow(2, 0, 10).isneginf().all().item<bool>());
  CHECK(result.lse.narrow(2, 10, 10).isfinite().all().item<bool>());
}

TEST_CASE("flex_attention refuses what it cannot compute, saying why", "[attention][flex]") {
  const Qkv in = random_qkv(1, 16, 16, 4, 2, 8, at::kFloat);
  CHECK_THROWS_AS(ka::flex_attention(in.q, in.k, in.v), ka::InvalidInput);  // GQA not enabled
  ka::FlexOptions options;
  options.enable_gqa = true;
  options.block_mask = ka::BlockMask::from_mask_mod(causal(), 1, 4, 32, 32);
  CHECK_THROWS_WITH(ka::flex_attention(in.q, in.k, in.v, options),
                    Catch::Contains("built for 32 x 32"));
  CHECK_THROWS_AS(ka::BlockMask::from_bool_mask(at::ones({16, 16}), 1, 4, 16, 16),
                  ka::InvalidInput);  // float: a score_mod, not a mask
}

TEST_CASE("flex through the dispatcher: Diffusers' masks, causal with and without one, GQA",
          "[attention][flex]") {
  const Qkv in = random_qkv(2, 200, 260, 4, 2, 64, at::kFloat);
  const double inf = std::numeric_limits<double>::infinity();
  // An additive bias whose first 130 keys are -inf for every query: whole tiles are dropped.
  at::Tensor bias = at::randn({2, 1, 200, 260}, seeded(5));
  bias.narrow(3, 0, 130).fill_(-inf);
  const at::Tensor padding = random_bool_mask({2, 260});  // (B, Skv): key padding
  struct Case {
    std::string name;
    std::optional<at::Tensor> mask;
    bool causal;
    at::Tensor reference_mask;  // undefined: none
  };
  const std::vector<Case> cases = {
      {"causal alone (Diffusers ignores it here)", std::nullopt, true, {}},
      {"bool key padding", padding, false, padding.view({2, 1, 1, 260})},
      {"bool key padding and causal", padding, true,
       padding.view({2, 1, 1, 260}).logical_and(at::ones({200, 260}, at::kBool).tril())},
      {"additive with -inf tiles", bias, false, bias},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    ka::AttentionOptions options;
    options.backend = "flex";
    options.attn_mask = c.mask;
    options.is_causal = c.causal;
    options.enable_gqa = true;
    const auto result = ka::dispatch_attention_with_lse(in.q, in.k, in.v, options);
    // The reference takes causal or a mask: both are combined in reference_mask.
    Reference ref{std::nullopt, c.causal && !c.mask, std::nullopt};
    if (c.reference_mask.defined()) ref.mask4d = c.reference_mask;
    CHECK(max_abs_diff(result.out, reference_attention(in, ref)) < 1e-5);
    CHECK(max_abs_diff(result.lse, reference_lse(in, ref)) < 1e-5);
    CHECK(max_abs_diff(ka::dispatch_attention(in.q, in.k, in.v, options), result.out) == 0.0);
  }
}

TEST_CASE("flex through the dispatcher refuses dropout and a mask that does not fit",
          "[attention][flex]") {
  const Qkv in = random_qkv(1, 16, 16, 2, 2, 8, at::kFloat);
  ka::AttentionOptions options;
  options.backend = "flex";
  options.dropout_p = 0.1;
  CHECK_THROWS_AS(ka::dispatch_attention(in.q, in.k, in.v, options), ka::UnsupportedArgument);
  options.dropout_p = 0.0;
  options.attn_mask = at::ones({3, 16, 16}, at::TensorOptions().dtype(at::kBool));
  CHECK_THROWS_AS(ka::dispatch_attention(in.q, in.k, in.v, options), ka::InvalidInput);
}
