// Process-wide backend semantics: the registry, guards, set/reset on models, layers.
#include <stdexcept>
#include <string>
#include <vector>

#include "attention/native_reference.hpp"
#include "attention/semantics_errors.hpp"
#include "attention/semantics_support.hpp"
#include "kernelhub/attention.hpp"

// After the torch headers: c10/util/Logging.h defines a CHECK macro of its own.
#include <catch2/catch.hpp>

namespace ka = kernelhub::attention;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using kernelhub::testing::max_abs_diff;
using kernelhub::testing::random_bool_mask;
using kernelhub::testing::random_qkv;
using kernelhub::testing::reference_attention;
using kernelhub::testing::thrown;
using kernelhub::testing::TwoLayerModel;

namespace {

// _native_flash refuses masks and native takes them: a masked call shows which of the two
// a layer or a dispatch really used.
struct MaskedCall {
  kernelhub::testing::Qkv in = random_qkv(2, 5, 9, 4, 4, 64, at::kFloat);
  at::Tensor mask = random_bool_mask({2, 9});
  ka::AttentionOptions options() const {
    ka::AttentionOptions o;
    o.attn_mask = mask;
    return o;
  }
  at::Tensor expected() const {
    return reference_attention(in, {.mask4d = mask.view({2, 1, 1, 9})});
  }
};

bool runs_native(ka::AttentionImpl& layer, const MaskedCall& call) {
  try {
    const at::Tensor out = layer.forward(call.in.q, call.in.k, call.in.v, call.options());
    return max_abs_diff(out, call.expected()) <= 1e-5;
  } catch (const ka::UnsupportedArgument&) {
    return false;  // _native_flash
  }
}

bool dispatch_runs_native(const MaskedCall& call) {
  try {
    const at::Tensor out = ka::dispatch_attention(call.in.q, call.in.k, call.in.v, call.options());
    return max_abs_diff(out, call.expected()) <= 1e-5;
  } catch (const ka::UnsupportedArgument&) {
    return false;
  }
}

}  // namespace

TEST_CASE("list_backends has the 27 Diffusers 0.42.1 names in enum order",
          "[attention][registry]") {
  const std::vector<std::string> expected = {"flash",
                                             "flash_hub",
                                             "flash_varlen",
                                             "flash_varlen_hub",
                                             "flash_4_hub",
                                             "_flash_3",
                                             "_flash_varlen_3",
                                             "_flash_3_hub",
                                             "_flash_3_varlen_hub",
                                             "aiter_fa2_hub",
                                             "flex",
                                             "native",
                                             "_native_cudnn",
                                             "_native_efficient",
                                             "_native_flash",
                                             "_native_math",
                                             "_native_npu",
                                             "_native_xla",
                                             "sage",
                                             "sage_hub",
                                             "sage_blackwell_hub",
                                             "sage_varlen",
                                             "_sage_qk_int8_pv_fp8_cuda",
                                             "_sage_qk_int8_pv_fp8_cuda_sm90",
                                             "_sage_qk_int8_pv_fp16_cuda",
                                             "_sage_qk_int8_pv_fp16_triton",
                                             "xformers"};
  CHECK(ka::list_backends() == expected);
}

TEST_CASE("unknown backend names are refused with the valid names and a hint",
          "[attention][registry]") {
  const auto in = random_qkv(1, 3, 3, 2, 2, 8, at::kFloat);
  ka::AttentionOptions options;
  options.backend = "nope";
  CHECK_THAT(thrown<ka::UnknownBackend>([&] { ka::dispatch_attention(in.q, in.k, in.v, options); }),
             StartsWith("Backend nope is not registered.") && Contains("_native_math") &&
                 Contains("list_backends()"));
  CHECK_THAT(thrown<ka::UnknownBackend>([&] { ka::BackendGuard("Native"); }),
             StartsWith("Backend Native is not registered.") && Contains("Did you mean native?"));
  TwoLayerModel model;
  CHECK_THAT(thrown<ka::UnknownBackend>([&] { ka::set_attention_backend(model, "Bogus"); }),
             StartsWith("Backend bogus is not registered."));
  CHECK_THROWS_AS(model.first->set_backend("FLASH_HUB"), ka::UnknownBackend);
  CHECK_FALSE(model.first->backend().has_value());
}

TEST_CASE("guards set the backend for a scope and nest and restore on exceptions",
          "[attention][guard]") {
  const std::string initial = ka::active_backend();
  MaskedCall call;
  TwoLayerModel model;
  {
    ka::BackendGuard outer("_native_math");
    CHECK(ka::active_backend() == "_native_math");
    {
      ka::BackendGuard inner("_native_flash");
      CHECK(ka::active_backend() == "_native_flash");
      // Both the dispatch default and unset layers follow the guard.
      CHECK_FALSE(dispatch_runs_native(call));
      CHECK_FALSE(runs_native(*model.first, call));
    }
    CHECK(ka::active_backend() == "_native_math");
    CHECK(runs_native(*model.first, call));
  }
  CHECK(ka::active_backend() == initial);

  CHECK_THROWS_AS(
      [] {
        ka::BackendGuard guard("_native_flash");
        throw std::runtime_error("boom");
      }(),
      std::runtime_error);
  CHECK(ka::active_backend() == initial);
  CHECK(dispatch_runs_native(call) == (initial != "_native_flash"));

  // A guard that cannot activate changes nothing.
  CHECK_THROWS_AS(ka::BackendGuard("_native_xla"), ka::BackendUnavailable);
  CHECK(ka::active_backend() == initial);
}

TEST_CASE(
    "set_attention_backend sets the model's layers and the active backend but not other models",
    "[attention][set]") {
  ka::BackendGuard isolate("native");
  MaskedCall call;
  TwoLayerModel a;
  TwoLayerModel b;

  ka::set_attention_backend(a, "_NATIVE_Flash");  // lowercased, like ModelMixin
  CHECK(a.first->backend() == std::optional<std::string>("_native_flash"));
  CHECK(a.nested().backend() == std::optional<std::string>("_native_flash"));
  CHECK(ka::active_backend() == "_native_flash");
  CHECK_FALSE(runs_native(*a.first, call));
  CHECK_FALSE(runs_native(a.nested(), call));
  CHECK_FALSE(dispatch_runs_native(call));

  // Diffusers #14249: b's unset layers would pick up _native_flash through the global.
  CHECK_FALSE(b.first->backend().has_value());
  CHECK(runs_native(*b.first, call));
  CHECK(runs_native(b.nested(), call));

  // A per-call backend beats the layer's.
  auto options = call.options();
  options.backend = "native";
  CHECK(max_abs_diff(a.first->forward(call.in.q, call.in.k, call.in.v, options), call.expected()) <=
        1e-5);

  ka::reset_attention_backend(a);
  CHECK_FALSE(a.first->backend().has_value());
  CHECK_FALSE(a.nested().backend().has_value());
  CHECK(runs_native(*a.first, call));
  // reset clears the layers only.
  CHECK(ka::active_backend() == "_native_flash");

  // A backend that cannot activate leaves layers and the active backend alone.
  ka::set_attention_backend(a, "_native_math");
  CHECK_THROWS_AS(ka::set_attention_backend(a, "_native_xla"), ka::BackendUnavailable);
  CHECK(a.first->backend() == std::optional<std::string>("_native_math"));
  CHECK(ka::active_backend() == "_native_math");
}

TEST_CASE("a layer's own backend - set activates and is case-sensitive and clears with nullopt",
          "[attention][set]") {
  ka::BackendGuard isolate("native");
  MaskedCall call;
  ka::Attention layer;
  layer->set_backend("_native_flash");
  CHECK_FALSE(runs_native(*layer, call));
  CHECK(ka::active_backend() == "native");  // the per-layer setter is local

  CHECK_THROWS_AS(layer->set_backend("_native_xla"), ka::BackendUnavailable);
  CHECK(layer->backend() == std::optional<std::string>("_native_flash"));
  CHECK_THAT(thrown<ka::UnknownBackend>([&] { layer->set_backend("_Native_Math"); }),
             Contains("Did you mean _native_math?"));

  layer->set_backend(std::nullopt);
  CHECK_FALSE(layer->backend().has_value());
  CHECK(runs_native(*layer, call));
}
