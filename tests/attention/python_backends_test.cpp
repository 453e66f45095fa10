// The four backends whose kernels are Python, on CPU tensors: flash_4_hub and
// sage_blackwell_hub with the fixture Hub's noarch kernels (fetched in-process or through
// kernelhubd, verified, imported), sage_varlen and _sage_qk_int8_pv_fp16_triton with the
// fixture `sageattention` package on the embedded Python's path (KERNELHUB_PYTHONPATH), its
// quantiser a @triton.jit kernel under TRITON_INTERPRET. Their CUDA requirement is relaxed
// by the rehearsal switch (relax_device_requirements), the one the GPU check's CPU
// rehearsal uses; results are compared with SDPA in fp32.
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>

#include "attention/hub_environment.hpp"
#include "kernelhub/attention.hpp"
#include "kernelhub/attention/requirements.hpp"

// Last: c10 defines its own CHECK macro, which must not replace Catch's.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using kernelhub::testing::HubEnvironment;
using kernelhub::testing::HubEnvironmentOptions;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::sdpa_reference;

namespace {

struct Inputs {
  at::Tensor q, k, v;
};

Inputs make_inputs(int64_t batch, int64_t seq, int64_t heads, int64_t heads_kv, int64_t dim,
                   at::ScalarType dtype) {
  at::manual_seed(5);
  return {at::randn({batch, seq, heads, dim}).to(dtype),
          at::randn({batch, seq, heads_kv, dim}).to(dtype),
          at::randn({batch, seq, heads_kv, dim}).to(dtype)};
}

HubEnvironmentOptions python_environment(bool with_daemon = false) {
  return {.with_daemon = with_daemon,
          .env = {{"TRITON_INTERPRET", "1"},
                  {"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"},
                  {"KERNELHUB_PYTHONPATH", KH_FIXTURE_PYTHON_SITE}}};
}

// The CPU rehearsal's switch, on for one test case.
struct Rehearsal {
  Rehearsal() { ka::detail::relax_device_requirements(true); }
  ~Rehearsal() { ka::detail::relax_device_requirements(false); }
  Rehearsal(const Rehearsal&) = delete;
  Rehearsal& operator=(const Rehearsal&) = delete;
};

void check(const std::string& backend, const Inputs& in, bool causal, double tolerance,
           const std::optional<at::Tensor>& key_mask = std::nullopt) {
  ka::AttentionOptions options;
  options.backend = backend;
  options.is_causal = causal;
  options.attn_mask = key_mask;
  options.enable_gqa = in.q.size(2) != in.k.size(2);
  const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, options);
  INFO(backend << " causal " << causal << " mask " << key_mask.has_value());
  CHECK(out.sizes() == in.q.sizes());
  CHECK(out.scalar_type() == in.q.scalar_type());
  CHECK(max_abs_diff(out, sdpa_reference(in.q, in.k, in.v, causal, key_mask)) <= tolerance);
}

}  // namespace

TEST_CASE("without a GPU the four Python-backed backends refuse, saying CUDA", "[python]") {
  const HubEnvironment hub(python_environment());
  for (const char* backend :
       {"flash_4_hub", "sage_blackwell_hub", "sage_varlen", "_sage_qk_int8_pv_fp16_triton"}) {
    INFO(backend);
    CHECK_THROWS_WITH(ka::BackendGuard(backend), Catch::Contains("CUDA"));
  }
}

TEST_CASE("flash_4_hub runs flash-attn4's Python interface, with its lse", "[python][hub]") {
  const HubEnvironment hub(python_environment());
  const Rehearsal rehearsal;
  const Inputs fp32 = make_inputs(2, 32, 4, 2, 64, at::kFloat);  // GQA
  check("flash_4_hub", fp32, false, 1e-4);
  check("flash_4_hub", fp32, true, 1e-4);
  check("flash_4_hub", make_inputs(1, 24, 2, 2, 128, at::kBFloat16), false, 3e-2);
  ka::AttentionOptions options;
  options.backend = "flash_4_hub";
  options.enable_gqa = true;
  const auto with_lse = ka::dispatch_attention_with_lse(fp32.q, fp32.k, fp32.v, options);
  options.backend = "native";
  const auto reference = ka::dispatch_attention_with_lse(fp32.q, fp32.k, fp32.v, options);
  CHECK(max_abs_diff(with_lse.lse, reference.lse) <= 1e-4);
  // A mask is refused as Diffusers refuses it, never dropped.
  options.backend = "flash_4_hub";
  options.attn_mask = at::rand({2, 32}) > 0.5;
  CHECK_THROWS_WITH(ka::dispatch_attention(fp32.q, fp32.k, fp32.v, options),
                    Catch::Contains("`attn_mask` is not supported for flash-attn 4."));
}

TEST_CASE("sage_blackwell_hub gets HND copies, so the caller's key is unchanged", "[python][hub]") {
  const HubEnvironment hub(python_environment(true));  // through kernelhubd
  const Rehearsal rehearsal;
  const Inputs in = make_inputs(2, 32, 4, 4, 64, at::kHalf);
  const at::Tensor key_before = in.k.clone();
  check("sage_blackwell_hub", in, false, 2e-2);
  check("sage_blackwell_hub", in, true, 2e-2);
  CHECK(in.k.equal(key_before));
  ka::AttentionOptions options;
  options.backend = "sage_blackwell_hub";
  options.scale = 0.3;
  CHECK_THROWS_WITH(ka::dispatch_attention(in.q, in.k, in.v, options),
                    Catch::Contains("A custom `scale` is not supported"));
}

TEST_CASE("sage_varlen and _sage_qk_int8_pv_fp16_triton run the sageattention package",
          "[python]") {
  const HubEnvironment hub(python_environment());
  const Rehearsal rehearsal;
  const Inputs in = make_inputs(2, 32, 4, 4, 64, at::kHalf);
  at::manual_seed(3);
  at::Tensor mask = at::rand({2, 32}) > 0.3;
  mask.select(1, 0).fill_(true);
  // int8 Q and K: the quantisation's error, as for sage_hub.
  check("sage_varlen", in, false, 6e-2);
  check("sage_varlen", in, false, 6e-2, mask);
  check("_sage_qk_int8_pv_fp16_triton", in, false, 6e-2);
  check("_sage_qk_int8_pv_fp16_triton", in, true, 6e-2);
  ka::AttentionOptions options;
  options.backend = "_sage_qk_int8_pv_fp16_triton";
  const auto with_lse = ka::dispatch_attention_with_lse(in.q, in.k, in.v, options);
  options.backend = "native";
  const auto reference = ka::dispatch_attention_with_lse(in.q.to(at::kFloat), in.k.to(at::kFloat),
                                                         in.v.to(at::kFloat), options);
  CHECK(max_abs_diff(with_lse.lse, reference.lse) <= 6e-2);
}

TEST_CASE("sage_varlen without sageattention in the embedded Python says what to install",
          "[python]") {
  const HubEnvironment hub({.env = {{"KERNELHUB_PYTHONPATH", ""}}});
  const Rehearsal rehearsal;
  CHECK_THROWS_WITH(ka::BackendGuard("sage_varlen"),
                    Catch::Contains("sageattention>=2.1.1") && Catch::Contains("no sageattention"));
}
