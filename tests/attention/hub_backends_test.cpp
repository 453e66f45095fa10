// The *_hub backends computing attention with the fixture kernels fetched from a local Hub
// (kernelhub serve) into a private cache, verified and dlopen'ed without Python; each result
// is compared with ATen SDPA computed independently in fp32.
#include <ATen/ops/arange.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>

#include "attention/hub_environment.hpp"
#include "kernelhub/attention.hpp"

// Last: c10 defines its own CHECK macro, which must not replace Catch's.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using kernelhub::testing::HubEnvironment;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::sdpa_reference;

namespace {

struct Shape {
  int64_t batch, seq_q, seq_k, heads, heads_kv, head_dim;
};

struct Inputs {
  at::Tensor q, k, v;
};

Inputs make_inputs(const Shape& s, at::ScalarType dtype) {
  at::manual_seed(7);
  return {at::randn({s.batch, s.seq_q, s.heads, s.head_dim}).to(dtype),
          at::randn({s.batch, s.seq_k, s.heads_kv, s.head_dim}).to(dtype),
          at::randn({s.batch, s.seq_k, s.heads_kv, s.head_dim}).to(dtype)};
}

// A key-padding mask with holes: valid keys at scattered positions, at least one per row.
at::Tensor scattered_key_mask(int64_t batch, int64_t seq_k) {
  at::manual_seed(11);
  at::Tensor mask = at::rand({batch, seq_k}) > 0.35;
  mask.select(1, 0).fill_(true);
  return mask;
}

const Shape kShapes[] = {
    {2, 64, 64, 4, 4, 64},   // plain
    {2, 48, 48, 8, 2, 64},   // GQA 8 query heads over 2 kv heads
    {1, 32, 32, 2, 2, 128},  // head size 128
    {1, 40, 72, 4, 4, 64},   // different query and key lengths
};

// One dispatch on `s`, compared with SDPA; `key_mask` is a boolean key-padding mask.
void check_case(const std::string& backend, const Shape& s, at::ScalarType dtype, double tolerance,
                bool causal, const std::optional<at::Tensor>& key_mask) {
  const Inputs in = make_inputs(s, dtype);
  ka::AttentionOptions options;
  options.is_causal = causal;
  options.attn_mask = key_mask;
  options.enable_gqa = s.heads != s.heads_kv;
  const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, options);
  INFO(backend << " B" << s.batch << " Sq" << s.seq_q << " Sk" << s.seq_k << " H" << s.heads << "/"
               << s.heads_kv << " D" << s.head_dim << " causal " << causal << " mask "
               << key_mask.has_value());
  CHECK(out.sizes() == in.q.sizes());
  CHECK(out.scalar_type() == dtype);
  CHECK(max_abs_diff(out, sdpa_reference(in.q, in.k, in.v, causal, key_mask)) <= tolerance);
}

void check_backend(const std::string& backend, bool varlen, at::ScalarType dtype,
                   double tolerance) {
  ka::BackendGuard guard(backend);
  for (const Shape& s : kShapes) {
    check_case(backend, s, dtype, tolerance, false, std::nullopt);
    // flash aligns causal masks bottom-right, SDPA top-left: compare where they agree.
    if (s.seq_q == s.seq_k) check_case(backend, s, dtype, tolerance, true, std::nullopt);
    if (varlen) {
      check_case(backend, s, dtype, tolerance, false, scattered_key_mask(s.batch, s.seq_k));
    }
  }
}

}  // namespace

TEST_CASE("flash_hub matches SDPA in fp32 and bf16", "[hub]") {
  HubEnvironment hub;
  check_backend("flash_hub", false, at::kFloat, 1e-5);
  check_backend("flash_hub", false, at::kBFloat16, 2e-2);
}

TEST_CASE("flash_hub pads head sizes that are not a multiple of 8", "[hub]") {
  HubEnvironment hub;
  ka::BackendGuard guard("flash_hub");
  const Inputs in = make_inputs({1, 16, 16, 2, 2, 36}, at::kFloat);
  CHECK(max_abs_diff(ka::dispatch_attention(in.q, in.k, in.v), sdpa_reference(in.q, in.k, in.v)) <=
        1e-5);
}

TEST_CASE("flash_varlen_hub honours key-padding masks with valid keys anywhere", "[hub]") {
  HubEnvironment hub;
  check_backend("flash_varlen_hub", true, at::kFloat, 1e-5);
  check_backend("flash_varlen_hub", true, at::kBFloat16, 2e-2);
}

TEST_CASE("_flash_3_hub and _flash_3_varlen_hub match SDPA", "[hub]") {
  HubEnvironment hub;
  check_backend("_flash_3_hub", false, at::kFloat, 1e-5);
  check_backend("_flash_3_varlen_hub", true, at::kFloat, 1e-5);
  check_backend("_flash_3_varlen_hub", true, at::kBFloat16, 2e-2);
}

TEST_CASE("sage_hub computes int8-quantised attention once remote kernels are trusted", "[hub]") {
  HubEnvironment hub({.env = {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}}});
  // int8 Q and K: the error is the quantisation's, bounded here for unit-normal inputs.
  check_backend("sage_hub", false, at::kBFloat16, 6e-2);
  check_backend("sage_hub", false, at::kHalf, 6e-2);
}

TEST_CASE("a mask on flash_hub and dropout on _flash_3_hub are errors and never dropped", "[hub]") {
  HubEnvironment hub;
  const Inputs in = make_inputs({1, 16, 16, 2, 2, 64}, at::kFloat);
  ka::AttentionOptions masked;
  masked.backend = "flash_hub";
  masked.attn_mask = scattered_key_mask(1, 16);
  CHECK_THROWS_AS(ka::dispatch_attention(in.q, in.k, in.v, masked), ka::UnsupportedArgument);
  CHECK_THROWS_WITH(ka::dispatch_attention(in.q, in.k, in.v, masked),
                    Catch::Contains("`attn_mask` is not supported for flash-attn 2."));
  ka::AttentionOptions dropout;
  dropout.backend = "_flash_3_hub";
  dropout.dropout_p = 0.1;
  CHECK_THROWS_AS(ka::dispatch_attention(in.q, in.k, in.v, dropout), ka::UnsupportedArgument);
}

TEST_CASE("set_attention_backend fetches flash_hub through kernelhubd", "[hub][daemon]") {
  HubEnvironment hub({.with_daemon = true, .env = {}});
  torch::nn::Module model;
  auto first = model.register_module("first", ka::Attention());
  auto second = model.register_module("second", ka::Attention());
  ka::set_attention_backend(model, "flash_hub");
  CHECK(first->backend() == std::optional<std::string>("flash_hub"));
  CHECK(second->backend() == std::optional<std::string>("flash_hub"));
  const Inputs in = make_inputs({2, 32, 32, 4, 4, 64}, at::kFloat);
  CHECK(max_abs_diff(first->forward(in.q, in.k, in.v), sdpa_reference(in.q, in.k, in.v)) <= 1e-5);
  // The daemon fetched the kernel into its cache.
  CHECK(std::filesystem::exists(hub.cache() / "kernels--kernels-community--flash-attn2"));
}
