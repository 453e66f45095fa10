// The dispatcher's per-call rules on a backend made up here (detail::run_backend): every
// argument a backend does not honour is refused with a how-to-fix, never dropped; the
// constraints run only with checks on; ATen errors come back as dispatcher errors.
#include <stdexcept>
#include <string>

#include <c10/util/Exception.h>

#include "attention/native_reference.hpp"
#include "attention/semantics_errors.hpp"
#include "attention/semantics_support.hpp"
#include "kernelhub/attention/dispatch.hpp"

// After the torch headers: c10/util/Logging.h defines a CHECK macro of its own.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
namespace kd = kernelhub::attention::detail;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using kernelhub::testing::ChecksSwitch;
using kernelhub::testing::random_bool_mask;
using kernelhub::testing::random_qkv;
using kernelhub::testing::thrown;

namespace {

int runs = 0;

void refuse_everything(const kd::AttentionInputs&) { throw ka::InvalidInput("constraint ran"); }

// Honours nothing, counts its runs, returns the query.
kd::Backend plain_backend() {
  kd::Backend backend;
  backend.name = "plain";
  backend.constraints = {refuse_everything};
  backend.mask_refusal = "`attn_mask` is not supported for plain attention.";
  backend.activate = [] {};
  backend.run = [](const kd::AttentionInputs& in) {
    ++runs;
    return in.query;
  };
  return backend;
}

}  // namespace

TEST_CASE("arguments a backend does not honour are refused with how to fix them",
          "[attention][dispatch]") {
  ChecksSwitch off(false);
  const kd::Backend backend = plain_backend();
  const auto in = random_qkv(1, 3, 5, 4, 2, 8, at::kFloat);
  const auto same_heads = random_qkv(1, 3, 5, 2, 2, 8, at::kFloat);
  const auto refusal = [&](const ka::AttentionOptions& options, const kernelhub::testing::Qkv& x) {
    return thrown<ka::UnsupportedArgument>(
        [&] { kd::run_backend(backend, x.q, x.k, x.v, options); });
  };
  runs = 0;
  ka::AttentionOptions options;
  options.attn_mask = random_bool_mask({1, 5});
  CHECK_THAT(refusal(options, same_heads),
             StartsWith("`attn_mask` is not supported for plain attention. Pass attn_mask = "
                        "nullopt, or use a backend that takes masks"));
  options = {};
  options.dropout_p = 0.1;
  CHECK_THAT(refusal(options, same_heads),
             StartsWith("`dropout_p` is not supported for plain.") && Contains("dropout_p = 0"));
  options = {};
  options.is_causal = true;
  CHECK_THAT(refusal(options, same_heads),
             StartsWith("`is_causal` is not supported for plain.") && Contains("causal attn_mask"));
  options = {};
  options.scale = 0.5;
  CHECK_THAT(refusal(options, same_heads),
             StartsWith("A custom `scale` is not supported for plain.") &&
                 Contains("scale * sqrt(head_dim)"));
  options = {};
  options.enable_gqa = true;
  CHECK_THAT(refusal(options, in), StartsWith("`enable_gqa` is not supported for plain.") &&
                                       Contains("repeat_interleave"));
  CHECK(runs == 0);

  // Defaults pass, and the backend runs.
  CHECK(kd::run_backend(backend, same_heads.q, same_heads.k, same_heads.v, {}).equal(same_heads.q));
  CHECK(runs == 1);
}

TEST_CASE("constraints run only with checks enabled", "[attention][dispatch]") {
  const kd::Backend backend = plain_backend();
  const auto in = random_qkv(1, 3, 5, 2, 2, 8, at::kFloat);
  runs = 0;
  {
    ChecksSwitch on(true);
    CHECK_THAT(thrown<ka::InvalidInput>([&] { kd::run_backend(backend, in.q, in.k, in.v, {}); }),
               Equals("constraint ran"));
  }
  CHECK(runs == 0);
  ChecksSwitch off(false);
  CHECK_NOTHROW(kd::run_backend(backend, in.q, in.k, in.v, {}));
  CHECK(runs == 1);
}

TEST_CASE("ATen errors from a backend come back as dispatcher errors naming it",
          "[attention][dispatch]") {
  ChecksSwitch off(false);
  kd::Backend backend = plain_backend();
  backend.run = [](const kd::AttentionInputs&) -> at::Tensor {
    TORCH_CHECK(false, "kernel said no");
  };
  const auto in = random_qkv(1, 3, 5, 2, 2, 8, at::kFloat);
  CHECK_THAT(thrown<ka::AttentionError>([&] { kd::run_backend(backend, in.q, in.k, in.v, {}); }),
             StartsWith("plain failed: kernel said no"));
}

TEST_CASE("native and _native_math apply dropout and _native_flash on CPU refuses it",
          "[attention][dispatch][native]") {
  const auto in = random_qkv(1, 6, 6, 2, 2, 16, at::kFloat);
  ka::AttentionOptions options;
  options.dropout_p = 0.5;
  for (const std::string backend : {"native", "_native_math"}) {
    CAPTURE(backend);
    options.backend = backend;
    const at::Tensor out = ka::dispatch_attention(in.q, in.k, in.v, options);
    REQUIRE(out.sizes() == in.q.sizes());
    // Dropped probabilities change the result: dropout is applied, not ignored.
    CHECK(kernelhub::testing::max_abs_diff(out, kernelhub::testing::reference_attention(in)) >
          1e-3);
  }
  options.backend = "_native_flash";
  CHECK_THAT(
      thrown<ka::UnsupportedArgument>([&] { ka::dispatch_attention(in.q, in.k, in.v, options); }),
      StartsWith("`dropout_p` is not supported by torch's CPU flash kernel"));
}
