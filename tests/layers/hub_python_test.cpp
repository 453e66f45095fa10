// Python-only layer kernels (kernels-community/liger-kernels, a noarch build) bound to the
// C++ modules: the class is run in the embedded Python on the module's attributes, the
// gradients reach the C++ parameters, and kernels' class rules refuse what they refuse.
#include <ATen/ops/randn.h>

#include "attention/hub_environment.hpp"
#include "kernelhub/kernelize.hpp"
#include "layers/layer_support.hpp"

#include <catch2/catch.hpp>

namespace kl = kernelhub::layers;
using kernelhub::testing::all_close;
using kernelhub::testing::HubEnvironment;
using kl::Mode;

namespace {

kl::KernelMapping liger(const std::string& layer, Mode mode = Mode::fallback) {
  kl::KernelMapping mapping;
  mapping.add("RMSNorm", {"cpu"},
              {{mode, kl::hub_layer("kernels-community/liger-kernels", layer, 3)}});
  return mapping;
}

}  // namespace

TEST_CASE("liger's LigerRMSNorm runs on the C++ module's weight and eps", "[layers_hub][python]") {
  HubEnvironment hub;
  kl::RMSNorm plain(kl::RMSNormOptions(24).eps(1e-5));
  plain->weight.data().copy_(at::randn({24}));
  auto bound = std::dynamic_pointer_cast<kl::RMSNormImpl>(plain->clone());
  const auto report = kl::kernelize(*bound, liger("LigerRMSNorm"), {.device = "cpu"});
  REQUIRE(report.bound_count() == 1);
  CHECK_THAT(report.layers[0].kernel, Catch::Contains("(torch-cpu) layers.LigerRMSNorm, python"));

  const at::Tensor x = at::randn({3, 4, 24});
  CHECK(all_close(bound->forward(x), plain->forward(x), 1e-5));
  // The attributes are read at each call, as from the module a forward is bound to.
  bound->weight.data().mul_(2.0);
  CHECK(all_close(bound->forward(x), plain->forward(x) * 2.0, 2e-5));
}

TEST_CASE("a Python layer trains: its autograd reaches the C++ parameters",
          "[layers_hub][python]") {
  HubEnvironment hub;
  kl::RMSNorm plain(kl::RMSNormOptions(16));
  plain->weight.data().copy_(at::randn({16}));
  auto bound = std::dynamic_pointer_cast<kl::RMSNormImpl>(plain->clone());
  REQUIRE(kl::kernelize(*bound, liger("LigerRMSNorm", Mode::training),
                        {.mode = Mode::training, .device = "cpu"})
              .bound_count() == 1);
  const at::Tensor x = at::randn({6, 16});
  const at::Tensor x_plain = x.clone().requires_grad_(true);
  const at::Tensor x_bound = x.clone().requires_grad_(true);
  const at::Tensor grad = at::randn({6, 16});
  plain->forward(x_plain).backward(grad);
  bound->forward(x_bound).backward(grad);
  CHECK(all_close(x_bound.grad(), x_plain.grad(), 1e-5));
  REQUIRE(bound->weight.grad().defined());
  CHECK(all_close(bound->weight.grad(), plain->weight.grad(), 1e-4));
}

TEST_CASE("kernels' class rules and has_backward apply to Python layers", "[layers_hub][python]") {
  HubEnvironment hub;
  kl::RMSNorm norm(kl::RMSNormOptions(8));
  CHECK_THROWS_WITH(kl::kernelize(*norm, liger("LigerRMSNormForwardOnly", Mode::training),
                                  {.mode = Mode::training, .device = "cpu"}),
                    Catch::Contains("does not support backward"));
  const auto report = kl::kernelize(*norm, liger("LigerRMSNormForwardOnly"),
                                    {.mode = Mode::training, .device = "cpu"});
  CHECK(report.layers.at(0).fallback_reason == "mode_unsupported");
  CHECK(kl::kernelize(*norm, liger("LigerRMSNormForwardOnly"), {.device = "cpu"}).bound_count() ==
        1);

  CHECK_THROWS_WITH(kl::kernelize(*norm, liger("LigerWithConstructor"), {.device = "cpu"}),
                    Catch::Contains("must not override the nn.Module constructor"));
  CHECK_THROWS_WITH(kl::kernelize(*norm, liger("NoSuchLayer"), {.device = "cpu"}),
                    Catch::Contains("Layer `NoSuchLayer` not found"));
}
