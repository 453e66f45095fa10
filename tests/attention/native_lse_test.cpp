// dispatch_attention_with_lse on the native family (CPU): the output and the log-sum-exp
// (B, H, Sq) against an independent float64 reference, over masks, causality, GQA and scale.
#include <string>
#include <vector>

#include <ATen/ops/logaddexp.h>

#include "attention/native_reference.hpp"
#include "kernelhub/attention_dispatch.hpp"

// After the torch headers: c10 defines a glog-style CHECK that Catch2's must replace.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using namespace kernelhub::testing;

namespace {

struct Case {
  const char* name;
  bool causal = false;
  bool bool_mask = false;
  bool float_mask = false;
  bool gqa = false;
  std::optional<double> scale = std::nullopt;
};

}  // namespace

TEST_CASE("return_lse: native, _native_math, _native_flash and flex give the float64 lse",
          "[attention][lse]") {
  const std::vector<Case> cases = {
      {.name = "plain"},
      {.name = "causal", .causal = true},
      {.name = "bool key-padding mask", .bool_mask = true},
      {.name = "additive mask", .float_mask = true},
      {.name = "gqa", .gqa = true},
      {.name = "causal gqa with a scale", .causal = true, .gqa = true, .scale = 0.3},
  };
  for (const std::string backend : {"native", "_native_math", "_native_flash", "flex"}) {
    for (const auto& c : cases) {
      if (backend == "_native_flash" && (c.bool_mask || c.float_mask)) continue;  // no masks
      INFO(backend << ", " << c.name);
      const Qkv in = random_qkv(2, 7, 9, 4, c.gqa ? 2 : 4, 16, at::kFloat);
      ka::AttentionOptions options;
      options.backend = backend;
      options.is_causal = c.causal;
      options.enable_gqa = c.gqa;
      options.scale = c.scale;
      Reference ref{std::nullopt, c.causal, c.scale};
      if (c.bool_mask) {
        const at::Tensor mask = random_bool_mask({2, 9});  // (B, Skv): key padding
        options.attn_mask = mask;
        ref.mask4d = mask.view({2, 1, 1, 9});
      }
      if (c.float_mask) {
        const at::Tensor bias = at::randn({2, 4, 7, 9}, seeded(7));
        options.attn_mask = bias;
        ref.mask4d = bias;
      }
      const auto result = ka::dispatch_attention_with_lse(in.q, in.k, in.v, options);
      REQUIRE(result.lse.sizes() == at::IntArrayRef({2, 4, 7}));
      CHECK(result.lse.scalar_type() == at::kFloat);
      CHECK(max_abs_diff(result.lse, reference_lse(in, ref)) < 1e-5);
      CHECK(max_abs_diff(result.out, reference_attention(in, ref)) < 1e-5);
      // The output is the one dispatch_attention gives.
      CHECK(max_abs_diff(result.out, ka::dispatch_attention(in.q, in.k, in.v, options)) < 1e-6);
    }
  }
}

TEST_CASE("return_lse merges: two halves of the keys give the whole", "[attention][lse]") {
  // What context parallelism relies on: out = sum_i exp(lse_i - lse) * out_i.
  const Qkv in = random_qkv(1, 5, 12, 2, 2, 8, at::kFloat);
  ka::AttentionOptions options;
  options.backend = "native";
  const auto whole = ka::dispatch_attention_with_lse(in.q, in.k, in.v, options);
  const auto a =
      ka::dispatch_attention_with_lse(in.q, in.k.narrow(1, 0, 6), in.v.narrow(1, 0, 6), options);
  const auto b =
      ka::dispatch_attention_with_lse(in.q, in.k.narrow(1, 6, 6), in.v.narrow(1, 6, 6), options);
  const at::Tensor lse = at::logaddexp(a.lse, b.lse);
  const auto weight = [&](const at::Tensor& part) {
    return part.sub(lse).exp().transpose(1, 2).unsqueeze(-1);  // (B, Sq, H, 1)
  };
  const at::Tensor out = weight(a.lse).mul(a.out).add(weight(b.lse).mul(b.out));
  CHECK(max_abs_diff(lse, whole.lse) < 1e-5);
  CHECK(max_abs_diff(out, whole.out) < 1e-5);
}
