// What kernelize refuses, and what falls back: the trust rule, an op whose schema is not the
// adapter's, a kernel without backward in training, a layer the kernel lacks or whose
// forward does not fit the module, and a kernel that cannot be fetched.
#include <ATen/ops/randn.h>

#include "attention/hub_environment.hpp"
#include "kernelhub/kernelize.hpp"
#include "layers/layer_support.hpp"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;
namespace kl = kernelhub::layers;
using kernelhub::testing::HubEnvironment;
using kernelhub::testing::OpRecorder;
using kl::Mode;

namespace {

kl::KernelMapping silu_and_mul_from(const std::string& repo, Mode mode = Mode::fallback) {
  kl::KernelMapping mapping;
  mapping.add("SiluAndMul", {"cpu"}, {{mode, kl::hub_layer(repo, "SiluAndMul", 1)}});
  return mapping;
}

}  // namespace

TEST_CASE("an untrusted publisher's layer is refused unless trusted, and nothing is fetched",
          "[layers_hub][trust]") {
  HubEnvironment hub;
  kl::SiluAndMul act;
  try {
    kl::kernelize(*act, silu_and_mul_from("someuser/activation"), {.device = "cpu"});
    FAIL("an untrusted layer kernel was bound");
  } catch (const kl::LayerRefused& error) {
    CHECK_THAT(error.what(), Catch::Contains("someuser/activation"));
    CHECK_THAT(error.what(), Catch::Contains("DIFFUSERS_TRUST_REMOTE_KERNELS=true"));
  }
  CHECK(act->kernel() == nullptr);
  CHECK_FALSE(fs::exists(hub.cache() / "kernels--someuser--activation"));
  // Fallback::all never turns a refusal into a silent fall-back.
  CHECK_THROWS_AS(kl::kernelize(*act, silu_and_mul_from("someuser/activation"),
                                {.device = "cpu", .fallback = kl::Fallback::all}),
                  kl::LayerRefused);

  kernelhub::testing::set_dispatcher_env({{"DIFFUSERS_TRUST_REMOTE_KERNELS", "true"}});
  const auto report =
      kl::kernelize(*act, silu_and_mul_from("someuser/activation"), {.device = "cpu"});
  CHECK(report.bound_count() == 1);
}

TEST_CASE("DIFFUSERS_DISABLE_REMOTE_CODE refuses kernels-community layers too",
          "[layers_hub][trust]") {
  HubEnvironment hub({.env = {{"DIFFUSERS_DISABLE_REMOTE_CODE", "true"},
                              {"DIFFUSERS_TRUST_REMOTE_KERNELS", "true"}}});
  kl::SiluAndMul act;
  CHECK_THROWS_WITH(
      kl::kernelize(*act, silu_and_mul_from("kernels-community/activation"), {.device = "cpu"}),
      Catch::Contains("DIFFUSERS_DISABLE_REMOTE_CODE"));
  CHECK(act->kernel() == nullptr);
}

TEST_CASE("an op whose schema is not the adapter's is refused before any call", "[layers_hub]") {
  HubEnvironment hub;
  kl::SiluAndMul act;
  try {
    kl::kernelize(*act, silu_and_mul_from("kernels-community/activation-drift"),
                  {.device = "cpu", .fallback = kl::Fallback::all});
    FAIL("a kernel with another silu_and_mul schema was bound");
  } catch (const kl::LayerRefused& error) {
    CHECK_THAT(error.what(), Catch::Contains("silu_and_mul(Tensor input) -> Tensor"));
    CHECK_THAT(error.what(),
               Catch::Contains("needs _activation_cpu_") &&
                   Catch::Contains("::silu_and_mul(Tensor! out, Tensor input) -> ()"));
  }
  CHECK(act->kernel() == nullptr);
  // The same kernel's other layers, whose ops kept their schema, bind.
  kl::Silu silu;
  kl::KernelMapping mapping;
  mapping.add("SiLU", {"cpu"}, kl::hub_layer("kernels-community/activation-drift", "Silu", 1));
  CHECK(kl::kernelize(*silu, mapping, {.device = "cpu"}).bound_count() == 1);
}

TEST_CASE("training refuses a kernel without backward, or falls back as allowed", "[layers_hub]") {
  HubEnvironment hub;
  kl::SiluAndMul act;
  // Registered for training: the kernel must have a backward (kernels raises the same).
  CHECK_THROWS_WITH(
      kl::kernelize(*act, silu_and_mul_from("kernels-community/activation", Mode::training),
                    {.mode = Mode::training, .device = "cpu"}),
      Catch::Contains("does not support backward") && Catch::Contains("with mode `training`"));
  // Registered as the fallback: training keeps the module's own forward...
  const auto report = kl::kernelize(*act, silu_and_mul_from("kernels-community/activation"),
                                    {.mode = Mode::training, .device = "cpu"});
  CHECK(report.layers.at(0).fallback_reason == "mode_unsupported");
  CHECK(act->kernel() == nullptr);
  // ... or raises when that case may not fall back.
  CHECK_THROWS_AS(
      kl::kernelize(*act, silu_and_mul_from("kernels-community/activation"),
                    {.mode = Mode::training, .device = "cpu", .fallback = kl::Fallback::none}),
      kl::MappingError);
  // Inference binds the same kernel.
  CHECK(kl::kernelize(*act, silu_and_mul_from("kernels-community/activation"), {.device = "cpu"})
            .bound_count() == 1);
}

TEST_CASE("rmsnorm trains: its backward op gives ATen's gradients", "[layers_hub]") {
  HubEnvironment hub;
  kl::RMSNorm plain(kl::RMSNormOptions(32));
  plain->weight.data().copy_(at::randn({32}));
  auto bound = std::dynamic_pointer_cast<kl::RMSNormImpl>(plain->clone());
  kl::KernelMapping mapping;
  mapping.add("RMSNorm", {"cpu"},
              {{Mode::training, kl::hub_layer("kernels-community/rmsnorm", "RMSNorm", 1)}});
  REQUIRE(kl::kernelize(*bound, mapping, {.mode = Mode::training, .device = "cpu"}).bound_count() ==
          1);
  const at::Tensor x = at::randn({4, 5, 32});
  const at::Tensor x_plain = x.clone().requires_grad_(true);
  const at::Tensor x_bound = x.clone().requires_grad_(true);
  const at::Tensor grad = at::randn({4, 5, 32});
  plain->forward(x_plain).backward(grad);
  OpRecorder ops("_rmsnorm_");
  bound->forward(x_bound).backward(grad);
  CHECK(ops.count("apply_rms_norm") == 1);
  CHECK(ops.count("apply_rms_norm_backward") == 1);
  CHECK(kernelhub::testing::all_close(x_bound.grad(), x_plain.grad(), 1e-5));
  CHECK(kernelhub::testing::all_close(bound->weight.grad(), plain->weight.grad(), 1e-4));
}

TEST_CASE("a missing layer, a misfit forward and an unfetchable kernel", "[layers_hub]") {
  HubEnvironment hub;
  kl::SiluAndMul act;
  kl::KernelMapping missing;
  missing.add("SiluAndMul", {"cpu"},
              kl::hub_layer("kernels-community/activation", "NoSuchLayer", 1));
  CHECK_THROWS_WITH(kl::kernelize(*act, missing, {.device = "cpu", .fallback = kl::Fallback::all}),
                    Catch::Contains("no native adapter for layers.NoSuchLayer"));

  // kernels' forward-signature check: a (x) layer cannot stand in for rotary's forward.
  kl::ApplyRotary rotary;
  kl::KernelMapping misfit;
  misfit.add("rotary_pos_emb", {"cpu"}, kl::hub_layer("kernels-community/activation", "Silu", 1));
  CHECK_THROWS_WITH(kl::kernelize(*rotary, misfit, {.device = "cpu"}),
                    Catch::Contains("Forward signature of") && Catch::Contains("rotary_pos_emb"));

  // A layer that reads an attribute the module lacks.
  kl::SiluAndMul gated;
  kl::KernelMapping reads_weight;
  reads_weight.add("SiluAndMul", {"cpu"}, kl::hub_layer("kernels-community/rmsnorm", "RMSNorm", 1));
  CHECK_THROWS_WITH(kl::kernelize(*gated, reads_weight, {.device = "cpu"}),
                    Catch::Contains("reads self.weight"));

  // A kernel that cannot be fetched: raised by default, the module's forward with
  // Fallback::all (kernels' CANNOT_LOAD).
  kl::KernelMapping absent;
  absent.add("SiluAndMul", {"cpu"},
             kl::hub_layer("kernels-community/no-such-kernel", "SiluAndMul", 1));
  CHECK_THROWS_AS(kl::kernelize(*act, absent, {.device = "cpu"}), kl::LayerUnavailable);
  const auto report = kl::kernelize(*act, absent, {.device = "cpu", .fallback = kl::Fallback::all});
  CHECK(report.layers.at(0).fallback_reason == "cannot_load");
  CHECK(act->kernel() == nullptr);
}
