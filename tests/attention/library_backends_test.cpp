// The library backends (flash, flash_varlen, _flash_3, _flash_varlen_3, sage, xformers)
// pointed at locally installed fixture builds through LOCAL_KERNELS, their version pins,
// and the precise refusals of backends that need a GPU, a runtime or Python.
#include <ATen/ops/abs.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/scaled_dot_product_attention.h>

#include "attention/hub_environment.hpp"
#include "kernelhub/attention.hpp"
#include "kernelhub/attention/kernel_provider.hpp"
#include "kernelhub/attention/sage_kernel.hpp"

// Last: c10 defines its own CHECK macro, which must not replace Catch's.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using kernelhub::testing::local_fixture;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::sdpa_reference;
using kernelhub::testing::set_dispatcher_env;

namespace {

std::string local_kernels() {
  return "flash-attn=" + local_fixture("flash-attn").string() +
         ":flash-attn3=" + local_fixture("flash-attn3").string() +
         ":sageattention=" + local_fixture("sageattention").string() +
         ":xformers=" + local_fixture("xformers").string();
}

struct Inputs {
  at::Tensor q, k, v;
};

Inputs make_inputs(int64_t heads, int64_t heads_kv, int64_t head_dim, at::ScalarType dtype) {
  at::manual_seed(3);
  return {at::randn({2, 48, heads, head_dim}).to(dtype),
          at::randn({2, 48, heads_kv, head_dim}).to(dtype),
          at::randn({2, 48, heads_kv, head_dim}).to(dtype)};
}

void check_matches_sdpa(const std::string& backend, at::ScalarType dtype, double tolerance,
                        bool with_mask) {
  ka::BackendGuard guard(backend);
  for (int64_t head_dim : {64, 128}) {
    for (auto [heads, heads_kv] : {std::pair<int64_t, int64_t>{4, 4}, {8, 2}}) {
      for (bool causal : {false, true}) {
        const Inputs in = make_inputs(heads, heads_kv, head_dim, dtype);
        ka::AttentionOptions options;
        options.is_causal = causal;
        options.enable_gqa = heads != heads_kv;
        std::optional<at::Tensor> key_mask;
        if (with_mask && !causal) {
          key_mask = at::rand({2, 48}) > 0.3;
          key_mask->select(1, 0).fill_(true);
          options.attn_mask = key_mask;
        }
        const double diff = max_abs_diff(ka::dispatch_attention(in.q, in.k, in.v, options),
                                         sdpa_reference(in.q, in.k, in.v, causal, key_mask));
        INFO(backend << " D" << head_dim << " H" << heads << "/" << heads_kv << " causal " << causal
                     << " mask " << key_mask.has_value());
        CHECK(diff <= tolerance);
      }
    }
  }
}

}  // namespace

TEST_CASE("flash and flash_varlen run a local flash-attn build", "[library]") {
  set_dispatcher_env({{"LOCAL_KERNELS", local_kernels()}});
  check_matches_sdpa("flash", at::kFloat, 1e-5, false);
  check_matches_sdpa("flash_varlen", at::kFloat, 1e-5, true);
  check_matches_sdpa("flash_varlen", at::kBFloat16, 2e-2, true);
}

TEST_CASE("_flash_3 and _flash_varlen_3 run a local FA3 build", "[library]") {
  set_dispatcher_env({{"LOCAL_KERNELS", local_kernels()}});
  check_matches_sdpa("_flash_3", at::kFloat, 1e-5, false);
  check_matches_sdpa("_flash_varlen_3", at::kFloat, 1e-5, true);
}

TEST_CASE("sage runs a local sageattention build", "[library]") {
  set_dispatcher_env({{"LOCAL_KERNELS", local_kernels()}});
  check_matches_sdpa("sage", at::kBFloat16, 6e-2, false);
}

TEST_CASE("the fp8-PV sage paths of the CUDA backends compute attention over a local build",
          "[library]") {
  // _sage_qk_int8_pv_fp8_cuda[_sm90] activate only on a CUDA sm90 device; past that gate they
  // run this orchestration, driven here directly over the CPU fixture's ops.
  namespace kd = ka::detail;
  set_dispatcher_env({{"LOCAL_KERNELS", local_kernels()}});
  const std::pair<const char*, kd::SagePath> paths[] = {
      {"_sage_qk_int8_pv_fp8_cuda", kd::SagePath::fp8_pv_sm89},
      {"_sage_qk_int8_pv_fp8_cuda_sm90", kd::SagePath::fp8_pv_sm90}};
  for (const auto& [name, path] : paths) {
    kd::SageKernel sage(name, path);
    sage.activate([] {
      return kd::provide_local_library({"sage", "sageattention", "2.1.1", "sageattention>=2.1.1"});
    });
    for (int64_t head_dim : {64, 128}) {
      for (bool causal : {false, true}) {
        const Inputs in = make_inputs(8, 2, head_dim, at::kBFloat16);
        ka::AttentionOptions options;
        options.is_causal = causal;
        options.enable_gqa = true;
        const at::Tensor out = sage.forward({in.q, in.k, in.v, options});
        INFO(name << " D" << head_dim << " causal " << causal);
        CHECK(out.scalar_type() == at::kBFloat16);
        // int8 Q/K and fp8 (e4m3, 3 mantissa bits) V: coarser than the fp16-PV path (measured
        // on such inputs: max 0.099, mean 0.007).
        const at::Tensor error =
            (out.to(at::kFloat) - sdpa_reference(in.q, in.k, in.v, causal)).abs();
        CHECK(error.max().item<double>() <= 0.15);
        CHECK(error.mean().item<double>() <= 0.02);
      }
    }
  }
}

TEST_CASE("xformers runs a local xformers build with additive and boolean masks", "[library]") {
  set_dispatcher_env({{"LOCAL_KERNELS", local_kernels()}});
  check_matches_sdpa("xformers", at::kFloat, 1e-5, true);
  // A 4-D additive bias is passed through as xformers' attn_bias.
  ka::BackendGuard guard("xformers");
  const Inputs in = make_inputs(4, 4, 64, at::kFloat);
  ka::AttentionOptions options;
  options.attn_mask = at::randn({2, 4, 48, 48});
  const at::Tensor expected =
      at::scaled_dot_product_attention(in.q.transpose(1, 2), in.k.transpose(1, 2),
                                       in.v.transpose(1, 2), options.attn_mask)
          .transpose(1, 2);
  CHECK(max_abs_diff(ka::dispatch_attention(in.q, in.k, in.v, options), expected) <= 1e-5);
}

TEST_CASE("a library below the version pin is refused with what to install", "[library]") {
  set_dispatcher_env({{"LOCAL_KERNELS", "flash-attn=" + local_fixture("flash-attn-old").string()}});
  try {
    ka::BackendGuard guard("flash");
    FAIL("flash-attn 2.5.0 was accepted");
  } catch (const ka::BackendUnavailable& e) {
    CHECK_THAT(e.what(), Catch::Contains("2.5.0"));
    CHECK_THAT(e.what(), Catch::Contains("flash-attn>=2.6.3"));
  }
}

TEST_CASE("a library backend without LOCAL_KERNELS says how to provide it", "[library]") {
  set_dispatcher_env({{"LOCAL_KERNELS", ""}});
  for (const char* backend : {"flash", "sage", "xformers", "_flash_3"}) {
    INFO(backend);
    CHECK_THROWS_AS(ka::BackendGuard(backend), ka::BackendUnavailable);
    CHECK_THROWS_WITH(ka::BackendGuard(backend), Catch::Contains("LOCAL_KERNELS="));
  }
}

TEST_CASE("backends that need a GPU refuse on this CPU machine with the reason", "[library]") {
  set_dispatcher_env({{"LOCAL_KERNELS", local_kernels()}});
  const std::pair<const char*, const char*> expected[] = {
      {"sage_varlen", "CUDA"},
      {"_sage_qk_int8_pv_fp8_cuda", "CUDA"},
      {"_sage_qk_int8_pv_fp8_cuda_sm90", "CUDA"},
      {"_sage_qk_int8_pv_fp16_cuda", "CUDA"},
      {"_sage_qk_int8_pv_fp16_triton", "CUDA"},
      {"flash_4_hub", "CUDA"},
      {"sage_blackwell_hub", "CUDA"},
      {"aiter_fa2_hub", "ROCm"},
  };
  for (const auto& [backend, reason] : expected) {
    INFO(backend);
    CHECK_THROWS_AS(ka::BackendGuard(backend), ka::BackendUnavailable);
    CHECK_THROWS_WITH(ka::BackendGuard(backend), Catch::Contains(reason));
  }
  CHECK(ka::active_backend() == "native");
}
