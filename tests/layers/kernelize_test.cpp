// kernelize's decisions that need no kernel: kernels' fallback cases and their refusals, the
// device taken from the model, the mode checks, DISABLE_KERNEL_MAPPING, and the report.
#include <cstdlib>

#include <ATen/ops/randn.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include "kernelhub/kernelize.hpp"
#include "kernelhub/provider/process_environment.hpp"

#include <catch2/catch.hpp>

namespace kl = kernelhub::layers;
using kl::Mode;

namespace {

// A small model: a Linear (so the device can be inferred) and three layer modules.
struct Block : torch::nn::Module {
  Block() {
    proj = register_module("proj", torch::nn::Linear(8, 16));
    act = register_module("act", kl::SiluAndMul());
    norm = register_module("norm", kl::RMSNorm(kl::RMSNormOptions(8)));
    gelu = register_module("gelu", kl::Gelu());
  }
  torch::nn::Linear proj{nullptr};
  kl::SiluAndMul act{nullptr};
  kl::RMSNorm norm{nullptr};
  kl::Gelu gelu{nullptr};
};

void set_env(const char* name, const char* value) {
  if (value == nullptr) {
    ::unsetenv(name);
  } else {
    ::setenv(name, value, 1);
  }
  kernelhub::provider::reload_process_environment();
}

}  // namespace

TEST_CASE("layers without a mapping keep their forward by default and report why", "[kernelize]") {
  set_env("DISABLE_KERNEL_MAPPING", nullptr);
  Block block;
  kl::KernelMapping mapping;
  mapping.add("GeLU", {"cuda"}, kl::hub_layer("org/act", "Gelu", 1));  // another device
  mapping.add("RMSNorm", {"cpu"}, {{Mode::training, kl::hub_layer("org/norm", "RMSNorm", 1)}});
  // inference+torch_compile's chain has no plain training: RMSNorm finds no mode.
  const auto report =
      kl::kernelize(block, mapping, {.mode = Mode::inference | Mode::torch_compile});
  REQUIRE(report.layers.size() == 3);
  CHECK(report.bound_count() == 0);
  CHECK(report.layers[0].module == "act");
  CHECK(report.layers[0].layer_name == "SiluAndMul");
  CHECK(report.layers[0].fallback_reason == "no_layer");
  CHECK(report.layers[1].module == "norm");
  CHECK(report.layers[1].fallback_reason == "no_compatible_mode");
  CHECK_FALSE(report.layers[1].repository);
  CHECK(report.layers[2].fallback_reason == "no_device");
  CHECK(block.act->kernel() == nullptr);
  CHECK_THAT(
      report.to_json(),
      Catch::Contains(
          R"("module":"gelu","layer_name":"GeLU","bound":false,"fallback_reason":"no_device")"));
}

TEST_CASE("each fallback case raises when fallback does not allow it", "[kernelize]") {
  set_env("DISABLE_KERNEL_MAPPING", nullptr);
  kl::SiluAndMul act;
  kl::KernelMapping mapping;
  const kl::KernelizeOptions strict{
      .mode = Mode::inference, .device = "cpu", .fallback = kl::Fallback::none};
  CHECK_THROWS_WITH(kl::kernelize(*act, mapping, strict),
                    Catch::Contains("No layer mapping for `SiluAndMul`"));

  mapping.add("SiluAndMul", {"cuda", kl::CapabilityRange{90, 100}},
              {{Mode::training, kl::hub_layer("org/act", "SiluAndMul", 1)}});
  CHECK_THROWS_WITH(kl::kernelize(*act, mapping, strict),
                    Catch::Contains("with device type `cpu`"));
  kl::KernelizeOptions cuda = strict;
  cuda.mode = Mode::inference | Mode::torch_compile;  // its chain has no plain training
  cuda.device = "cuda";
  cuda.capability = 80;
  CHECK_THROWS_WITH(kl::kernelize(*act, mapping, cuda),
                    Catch::Contains("with the right properties (capability 80)"));
  cuda.capability = 90;
  CHECK_THROWS_WITH(kl::kernelize(*act, mapping, cuda),
                    Catch::Contains("No repository for `SiluAndMul` for configuration "
                                    "mode=inference+torch_compile"));
  CHECK_THROWS_AS(kl::kernelize(*act, mapping, cuda), kl::MappingError);

  // Allowing exactly that case keeps the module's forward.
  cuda.fallback = kl::Fallback::no_compatible_mode;
  const auto report = kl::kernelize(*act, mapping, cuda);
  CHECK(report.layers.at(0).fallback_reason == "no_compatible_mode");
}

TEST_CASE("the device comes from the first parameter and modes are checked", "[kernelize]") {
  set_env("DISABLE_KERNEL_MAPPING", nullptr);
  Block block;
  kl::KernelMapping mapping;
  mapping.add("SiluAndMul", {"cpu"}, {{Mode::training, kl::hub_layer("org/act", "SiluAndMul", 1)}});
  // cpu from the Linear's weight: the cpu entry is found (a device without an entry would
  // report no_device), and inference+torch_compile finds no mode in it.
  const auto report =
      kl::kernelize(block, mapping, {.mode = Mode::inference | Mode::torch_compile});
  CHECK(report.layers.at(0).fallback_reason == "no_compatible_mode");

  kl::SiluAndMul lone;  // no parameters: the device must be given
  CHECK_THROWS_WITH(kl::kernelize(*lone, mapping), Catch::Contains("KernelizeOptions::device"));
  CHECK_THROWS_WITH(kl::kernelize(*lone, mapping, {.mode = Mode::fallback, .device = "cpu"}),
                    Catch::Contains("can only be used to register"));
  CHECK_THROWS_WITH(kl::kernelize(*lone, mapping, {.mode = Mode::torch_compile, .device = "cpu"}),
                    Catch::Contains("must contain Mode::inference or Mode::training"));
  CHECK_THROWS_WITH(kl::kernelize(*lone, mapping, {.mode = Mode::inference, .device = "gpu"}),
                    Catch::Contains("Unsupported device type 'gpu'"));
}

TEST_CASE("DISABLE_KERNEL_MAPPING keeps every module's own forward", "[kernelize]") {
  Block block;
  kl::KernelMapping mapping;  // empty, with fallback none: would raise if consulted
  set_env("DISABLE_KERNEL_MAPPING", "1");
  const auto report = kl::kernelize(block, mapping, {.fallback = kl::Fallback::none});
  CHECK(report.layers.size() == 3);
  for (const auto& layer : report.layers) CHECK(layer.fallback_reason == "disabled");
  set_env("DISABLE_KERNEL_MAPPING", "yes");
  CHECK_THROWS_WITH(kl::kernelize(block, mapping), Catch::Contains("is not an integer"));
  set_env("DISABLE_KERNEL_MAPPING", "0");
  CHECK_THROWS_AS(kl::kernelize(block, mapping, {.fallback = kl::Fallback::none}),
                  kl::MappingError);
  set_env("DISABLE_KERNEL_MAPPING", nullptr);
}
