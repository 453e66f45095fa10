// Input validation: the basic checks that always run, the Diffusers constraints behind
// DIFFUSERS_ATTN_CHECKS with their exact texts, and device requirements on this machine.
#include <string>

#include <ATen/Context.h>

#include "attention/native_reference.hpp"
#include "attention/semantics_errors.hpp"
#include "attention/semantics_support.hpp"
#include "kernelhub/attention/checks.hpp"
#include "kernelhub/attention/requirements.hpp"
#include "kernelhub/attention_dispatch.hpp"

// After the torch headers: c10/util/Logging.h defines a CHECK macro of its own.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using kernelhub::testing::thrown;
namespace kd = kernelhub::attention::detail;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using kernelhub::testing::ChecksSwitch;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::random_bool_mask;
using kernelhub::testing::random_qkv;
using kernelhub::testing::reference_attention;

namespace {

ka::AttentionOptions on(const std::string& backend) {
  ka::AttentionOptions options;
  options.backend = backend;
  return options;
}

}  // namespace

TEST_CASE("basic shape rules hold with checks off and say how to fix", "[attention][checks]") {
  ChecksSwitch off(false);
  SECTION("4-D tensors") {
    const auto in = random_qkv(1, 4, 4, 2, 2, 8, at::kFloat);
    CHECK_THAT(thrown<ka::InvalidInput>(
                   [&] { ka::dispatch_attention(in.q.flatten(2), in.k, in.v, on("native")); }),
               StartsWith("Query, key, and value must be 4-D") && Contains("unflatten"));
  }
  SECTION("grouped-query attention needs enable_gqa") {
    const auto in = random_qkv(1, 4, 4, 8, 2, 8, at::kFloat);
    CHECK_THAT(
        thrown<ka::InvalidInput>([&] { ka::dispatch_attention(in.q, in.k, in.v, on("native")); }),
        Contains("grouped-query attention needs enable_gqa") && Contains("enable_gqa = true"));
  }
  SECTION("query heads a multiple of key/value heads") {
    auto options = on("native");
    options.enable_gqa = true;
    const auto in = random_qkv(1, 4, 4, 8, 3, 8, at::kFloat);
    CHECK_THAT(thrown<ka::InvalidInput>([&] { ka::dispatch_attention(in.q, in.k, in.v, options); }),
               Contains("must be a multiple of the number of key/value heads"));
  }
  SECTION("head dimensions and sequence lengths") {
    const auto in = random_qkv(1, 4, 6, 2, 2, 8, at::kFloat);
    CHECK_THAT(thrown<ka::InvalidInput>(
                   [&] { ka::dispatch_attention(in.q, in.k.narrow(3, 0, 4), in.v, on("native")); }),
               StartsWith("Query, key, and value must have the same head dimension."));
    CHECK_THAT(thrown<ka::InvalidInput>(
                   [&] { ka::dispatch_attention(in.q, in.k, in.v.narrow(1, 0, 5), on("native")); }),
               StartsWith("Key and value must have the same sequence length."));
  }
}

TEST_CASE("with checks on dispatch fails with the Diffusers texts", "[attention][checks]") {
  const auto in = random_qkv(1, 4, 6, 2, 2, 64, at::kFloat);
  SECTION("dtype mismatch") {
    const at::Tensor k64 = in.k.to(at::kDouble);
    {
      ChecksSwitch on_(true);
      CHECK_THAT(
          thrown<ka::InvalidInput>([&] { ka::dispatch_attention(in.q, k64, in.v, on("native")); }),
          Equals("Query, key, and value must have the same dtype."));
    }
    ChecksSwitch off(false);
    // Without the checks ATen refuses it, reported as a dispatcher error naming the backend.
    CHECK_THAT(
        thrown<ka::AttentionError>([&] { ka::dispatch_attention(in.q, k64, in.v, on("native")); }),
        StartsWith("native failed:"));
  }
  SECTION("bf16/fp16 constraint of _native_flash") {
    {
      ChecksSwitch on_(true);
      CHECK_THAT(thrown<ka::InvalidInput>(
                     [&] { ka::dispatch_attention(in.q, in.k, in.v, on("_native_flash")); }),
                 Equals("Query, key, and value must be either bfloat16 or float16."));
    }
    ChecksSwitch off(false);
    const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, on("_native_flash"));
    CHECK(max_abs_diff(out, reference_attention(in)) <= 1e-5);
  }
  SECTION("shape texts") {
    ChecksSwitch on_(true);
    CHECK_THAT(thrown<ka::InvalidInput>([&] {
                 ka::dispatch_attention(in.q, in.k.narrow(3, 0, 32), in.v, on("native"));
               }),
               Equals("Query and key must have the same head dimension."));
    CHECK_THAT(thrown<ka::InvalidInput>(
                   [&] { ka::dispatch_attention(in.q, in.k, in.v.narrow(1, 0, 5), on("native")); }),
               Equals("Key and value must have the same sequence length."));
    auto options = on("native");
    options.attn_mask = random_bool_mask({1, 5});
    CHECK_THAT(thrown<ka::InvalidInput>([&] { ka::dispatch_attention(in.q, in.k, in.v, options); }),
               Equals("Attention mask must match the key's sequence length."));
  }
  SECTION("valid inputs still run") {
    ChecksSwitch on_(true);
    const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, on("native"));
    CHECK(max_abs_diff(out, reference_attention(in)) <= 1e-5);
  }
}

TEST_CASE("every Diffusers constraint has its exact text", "[attention][checks]") {
  const auto in = random_qkv(1, 4, 4, 2, 2, 32, at::kFloat);
  ka::AttentionOptions options;
  const kd::AttentionInputs cpu{in.q, in.k, in.v, options};
  CHECK_THAT(thrown<ka::InvalidInput>([&] { kd::check_device_cuda(cpu); }),
             Equals("Query, key, and value must be on a CUDA device."));
  CHECK_THAT(thrown<ka::InvalidInput>([&] { kd::check_device_cuda_atleast_sm<9, 0>(cpu); }),
             Equals("Query, key, and value must be on a CUDA device."));
  CHECK_THAT(thrown<ka::InvalidInput>([&] { kd::check_qkv_dtype_bf16(cpu); }),
             Equals("Query, key, and value must be bfloat16."));
  CHECK_NOTHROW(kd::check_device(cpu));
  CHECK_NOTHROW(kd::check_shape(cpu));
  CHECK_NOTHROW(kd::check_attn_mask_or_causal(cpu));

  const at::Tensor k16 = in.k.to(at::kHalf);
  const at::Tensor v16 = in.v.to(at::kHalf);
  CHECK_THAT(thrown<ka::InvalidInput>([&] {
               kd::check_qkv_dtype_match(kd::AttentionInputs{in.q, k16, in.v, options});
             }),
             Equals("Query and key must have the same dtype."));
  CHECK_THAT(thrown<ka::InvalidInput>([&] {
               kd::check_qkv_dtype_match(kd::AttentionInputs{in.q, in.k, v16, options});
             }),
             Equals("Query and value must have the same dtype."));

  ka::AttentionOptions masked_causal;
  masked_causal.attn_mask = random_bool_mask({1, 4});
  masked_causal.is_causal = true;
  CHECK_THAT(thrown<ka::InvalidInput>([&] {
               kd::check_attn_mask_or_causal(kd::AttentionInputs{in.q, in.k, in.v, masked_causal});
             }),
             Equals("`is_causal` cannot be True when `attn_mask` is not None."));
}

TEST_CASE("device requirements say what is missing on this machine", "[attention][requirements]") {
  if (at::hasCUDA()) {
    CHECK_NOTHROW(kd::require_cuda("probe"));
  } else {
    CHECK_THAT(thrown<ka::BackendUnavailable>([&] { kd::require_cuda("probe", 9, 0); }),
               StartsWith("probe needs a CUDA device: this process has no CUDA runtime"));
    CHECK_THAT(thrown<ka::BackendUnavailable>([&] { kd::require_rocm("probe"); }),
               StartsWith("probe needs an AMD GPU with a ROCm build of libtorch"));
  }
  if (!at::hasXLA()) {
    CHECK_THAT(thrown<ka::BackendUnavailable>([&] { kd::require_xla("probe", "native"); }),
               Contains("needs the XLA runtime") && Contains("or use native."));
  }
  CHECK_THAT(thrown<ka::BackendUnavailable>([&] { kd::require_npu("probe"); }),
             Contains("needs an Ascend NPU"));
}
