// return_lse through the hub flash kernels (the fixture builds compute softmax_lse like the
// real CUDA ones): the flash kernels, batch and varlen, against the float64 reference; sage's,
// converted from the op's base-2 lse of smoothed scores as sageattn does; a backend without
// one refuses it precisely.
#include <ATen/ops/randn.h>

#include "attention/hub_environment.hpp"
#include "attention/native_reference.hpp"
#include "kernelhub/attention.hpp"

// After the torch headers: c10 defines a glog-style CHECK that Catch2's must replace.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using kernelhub::testing::HubEnvironment;
using namespace kernelhub::testing;

TEST_CASE("return_lse: flash_hub and _flash_3_hub give the kernel's lse", "[hub][lse]") {
  HubEnvironment hub;
  for (const char* backend : {"flash_hub", "_flash_3_hub"}) {
    for (const bool causal : {false, true}) {
      INFO(backend << (causal ? ", causal" : ""));
      // Equal lengths: flash-attention aligns a causal mask to the bottom right, SDPA (the
      // reference) to the top left; they agree when Sq == Skv.
      const Qkv in = random_qkv(2, 8, 8, 4, 2, 16, at::kFloat);
      ka::AttentionOptions options;
      options.backend = backend;
      options.is_causal = causal;
      options.enable_gqa = true;
      const Reference ref{std::nullopt, causal, std::nullopt};
      const auto result = ka::dispatch_attention_with_lse(in.q, in.k, in.v, options);
      REQUIRE(result.lse.sizes() == at::IntArrayRef({2, 4, 8}));
      CHECK(result.lse.scalar_type() == at::kFloat);
      CHECK(max_abs_diff(result.lse, reference_lse(in, ref)) < 1e-5);
      CHECK(max_abs_diff(result.out, reference_attention(in, ref)) < 1e-5);
    }
  }
}

TEST_CASE("return_lse: the varlen kernels' packed lse comes back as (B, H, Sq)", "[hub][lse]") {
  HubEnvironment hub;
  const Qkv in = random_qkv(2, 8, 8, 4, 4, 16, at::kFloat);
  const at::Tensor keys = random_bool_mask({2, 8});  // valid keys anywhere
  for (const char* backend : {"flash_varlen_hub", "_flash_3_varlen_hub"}) {
    INFO(backend);
    ka::AttentionOptions options;
    options.backend = backend;
    options.attn_mask = keys;
    const Reference ref{keys.view({2, 1, 1, 8}), false, std::nullopt};
    const auto result = ka::dispatch_attention_with_lse(in.q, in.k, in.v, options);
    REQUIRE(result.lse.sizes() == at::IntArrayRef({2, 4, 8}));
    CHECK(max_abs_diff(result.lse, reference_lse(in, ref)) < 1e-5);
    CHECK(max_abs_diff(result.out, reference_attention(in, ref)) < 1e-5);
  }
}

TEST_CASE("return_lse: sage_hub gives sageattn's natural-log lse of the unsmoothed scores",
          "[hub][lse]") {
  HubEnvironment hub({.env = {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}}});
  for (const bool causal : {false, true}) {
    INFO((causal ? "causal" : "not causal"));
    // K with a large common offset: smoothing removes it from the scores the kernel sees, so
    // an lse that forgot to add q . mean(k) back would be off by far more than quantisation.
    Qkv in = random_qkv(2, 64, 64, 4, 2, 64, at::kBFloat16);
    in.k = in.k.add(2.0);
    ka::AttentionOptions options;
    options.backend = "sage_hub";
    options.is_causal = causal;
    options.enable_gqa = true;
    const Reference ref{std::nullopt, causal, std::nullopt};
    const auto result = ka::dispatch_attention_with_lse(in.q, in.k, in.v, options);
    REQUIRE(result.lse.sizes() == at::IntArrayRef({2, 4, 64}));
    CHECK(result.lse.scalar_type() == at::kFloat);
    const at::Tensor reference = reference_lse(in, ref);
    // int8 Q and K: the same order of error as the output's (hub_backends_test, 6e-2).
    CHECK(max_abs_diff(result.lse, reference) < 6e-2);
    CHECK(reference.abs().max().item<double>() > 1.0);  // the offset matters
    CHECK(max_abs_diff(result.out, reference_attention(in, ref)) < 6e-2);
  }
}

TEST_CASE("return_lse is refused precisely where the backend cannot produce it", "[hub][lse]") {
  const Qkv in = random_qkv(1, 4, 4, 2, 2, 16, at::kBFloat16);
  ka::AttentionOptions options;
  options.backend = "xformers";  // refused before activation: no LOCAL_KERNELS needed
  try {
    (void)ka::dispatch_attention_with_lse(in.q, in.k, in.v, options);
    FAIL("return_lse was not refused");
  } catch (const ka::UnsupportedArgument& e) {
    const std::string message = e.what();
    CHECK(message.find("xformers does not support return_lse") == 0);
    CHECK(message.find("sage_hub") != std::string::npos);
    CHECK(message.find("flex") != std::string::npos);
  }
}
