// The native family through dispatch_attention against the float64 SDPA reference.
#include <string>
#include <vector>

#include <ATen/Context.h>
#include <ATen/ops/where.h>

#include "attention/native_reference.hpp"
#include "attention/semantics_errors.hpp"
#include "kernelhub/attention_dispatch.hpp"

// After the torch headers: c10/util/Logging.h defines a CHECK macro of its own.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::random_bool_mask;
using kernelhub::testing::random_qkv;
using kernelhub::testing::Reference;
using kernelhub::testing::reference_attention;
using kernelhub::testing::thrown;

namespace {

// Max |out - float64 reference| measured on this CPU (torch 2.15) over the shapes below:
// fp32 1.6e-6, bf16 9.1e-3, fp16 1.1e-3 (the same for native, _native_math and _native_flash
// within 20%). The bounds leave ~2x headroom.
double tolerance(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return 1e-5;
    case at::kBFloat16:
      return 2e-2;
    case at::kHalf:
      return 2.5e-3;
    default:
      return 0.0;
  }
}

ka::AttentionOptions on(const std::string& backend) {
  ka::AttentionOptions options;
  options.backend = backend;
  return options;
}

const std::vector<std::string> kComputing = {"native", "_native_math", "_native_flash"};

}  // namespace

TEST_CASE("native backends match SDPA over head sizes and GQA and causal and Sq != Skv",
          "[attention][native]") {
  const auto backend = GENERATE(from_range(kComputing));
  const auto dtype = GENERATE(at::kFloat, at::kBFloat16, at::kHalf);
  const int64_t head_dim = GENERATE(64, 128);
  const int64_t kv_heads = GENERATE(8, 2);
  const bool causal = GENERATE(false, true);
  const auto seq = GENERATE(std::pair<int64_t, int64_t>{16, 16}, std::pair<int64_t, int64_t>{7, 29},
                            std::pair<int64_t, int64_t>{33, 20});
  CAPTURE(backend, dtype, head_dim, kv_heads, causal, seq.first, seq.second);

  const auto in = random_qkv(2, seq.first, seq.second, 8, kv_heads, head_dim, dtype);
  auto options = on(backend);
  options.is_causal = causal;
  options.enable_gqa = kv_heads != 8;
  const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, options);

  REQUIRE(out.sizes() == in.q.sizes());
  REQUIRE(out.scalar_type() == dtype);
  CHECK(max_abs_diff(out, reference_attention(in, {.causal = causal})) <= tolerance(dtype));
}

TEST_CASE("native backends honour a custom scale", "[attention][native]") {
  const auto backend = GENERATE(from_range(kComputing));
  const auto in = random_qkv(2, 9, 13, 4, 4, 64, at::kFloat);
  auto options = on(backend);
  options.scale = 0.05;
  const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, options);
  CHECK(max_abs_diff(out, reference_attention(in, {.scale = 0.05})) <= 1e-5);
  // And the scale matters: the default-scale reference is far away.
  CHECK(max_abs_diff(out, reference_attention(in)) > 1e-3);
}

TEST_CASE("native and _native_math take boolean and additive and 2-D padding masks",
          "[attention][native][masks]") {
  const std::string backend = GENERATE("native", "_native_math");
  const auto dtype = GENERATE(at::kFloat, at::kBFloat16);
  const int64_t kv_heads = GENERATE(8, 2);
  CAPTURE(backend, dtype, kv_heads);
  const int64_t batch = 3, seq_q = 11, seq_kv = 17;
  const auto in = random_qkv(batch, seq_q, seq_kv, 8, kv_heads, 64, dtype);
  auto options = on(backend);
  options.enable_gqa = kv_heads != 8;

  SECTION("boolean (B, 1, Sq, Skv)") {
    const at::Tensor mask = random_bool_mask({batch, 1, seq_q, seq_kv});
    options.attn_mask = mask;
    const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, options);
    CHECK(max_abs_diff(out, reference_attention(in, {.mask4d = mask})) <= tolerance(dtype));
  }
  SECTION("additive (B, H, Sq, Skv)") {
    auto gen = kernelhub::testing::seeded(7);
    const at::Tensor bias = at::randn({batch, 8, seq_q, seq_kv}, gen).to(dtype);
    options.attn_mask = bias;
    const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, options);
    CHECK(max_abs_diff(out, reference_attention(in, {.mask4d = bias})) <= tolerance(dtype));
  }
  SECTION("2-D boolean key padding (B, Skv)") {
    const at::Tensor padding = random_bool_mask({batch, seq_kv}, 5);
    options.attn_mask = padding;
    const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, options);
    const at::Tensor mask4d = padding.view({batch, 1, 1, seq_kv});
    CHECK(max_abs_diff(out, reference_attention(in, {.mask4d = mask4d})) <= tolerance(dtype));
    // Padding really excludes keys: the unmasked result differs.
    CHECK(max_abs_diff(out, reference_attention(in)) > 1e-2);
  }
  SECTION("2-D additive key padding (B, Skv)") {
    const at::Tensor padding = random_bool_mask({batch, seq_kv}, 6);
    const at::Tensor additive =
        at::where(padding, 0.0, -std::numeric_limits<double>::infinity()).to(dtype);
    options.attn_mask = additive;
    const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, options);
    const at::Tensor mask4d = padding.view({batch, 1, 1, seq_kv});
    CHECK(max_abs_diff(out, reference_attention(in, {.mask4d = mask4d})) <= tolerance(dtype));
  }
}

TEST_CASE("_native_flash refuses masks with the Diffusers text and how to fix it",
          "[attention][native]") {
  const auto in = random_qkv(1, 4, 4, 2, 2, 64, at::kFloat);
  auto options = on("_native_flash");
  options.attn_mask = random_bool_mask({1, 4});
  CHECK_THAT(
      thrown<ka::UnsupportedArgument>([&] { ka::dispatch_attention(in.q, in.k, in.v, options); }),
      Catch::Matchers::StartsWith("`attn_mask` is not supported for native flash attention") &&
          Catch::Matchers::Contains("attn_mask = nullopt") &&
          Catch::Matchers::Contains("flash_varlen_hub"));
}

TEST_CASE("backends this CPU process cannot run refuse with the precise reason",
          "[attention][native][refusals]") {
  const auto in = random_qkv(1, 4, 4, 2, 2, 64, at::kBFloat16);
  const std::string initial = ka::active_backend();
  using Catch::Matchers::Contains;
  struct Case {
    std::string backend;
    std::string reason;
  };
  // On a CUDA machine the first two take the real path (tested there).
  std::vector<Case> cases = {
      {"_native_npu", "_native_npu needs an Ascend NPU: no \"npu\" PrivateUse1 backend"},
      {"_native_xla", "_native_xla needs the XLA runtime: no XLA backend is registered"},
  };
  if (!at::hasCUDA()) {
    cases.push_back({"_native_cudnn",
                     "_native_cudnn needs a CUDA device: this process has no CUDA runtime (torch "
                     "reports no CUDA). Run on a machine with an NVIDIA GPU and a CUDA build of "
                     "libtorch, or use native / _native_math / _native_flash."});
    cases.push_back({"_native_efficient", "_native_efficient needs a CUDA device"});
  }
  for (const auto& c : cases) {
    CAPTURE(c.backend);
    CHECK_THAT(thrown<ka::BackendUnavailable>([&] { ka::BackendGuard(c.backend); }),
               Contains(c.reason));
    CHECK_THAT(thrown<ka::BackendUnavailable>(
                   [&] { ka::dispatch_attention(in.q, in.k, in.v, on(c.backend)); }),
               Contains(c.reason));
    CHECK(ka::active_backend() == initial);
  }
}
