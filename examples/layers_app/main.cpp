// A transformer MLP block (RMSNorm, a gated projection, SiluAndMul, a down projection) whose
// layers kernelize binds to the Hub kernels a mapping file names. It runs once on ATen,
// kernelizes a copy, runs it, and prints what each layer got and the largest difference.
//   layers_app MAPPING.toml
#include <kernelhub/kernelize.hpp>

#include <torch/nn/modules/linear.h>

#include <ATen/ops/randn.h>

#include <cstdio>
#include <exception>
#include <memory>

namespace kl = kernelhub::layers;

struct MlpImpl : torch::nn::Cloneable<MlpImpl> {
  explicit MlpImpl(int64_t dim) : dim(dim) { reset(); }
  void reset() override {
    norm = register_module("norm", kl::RMSNorm(kl::RMSNormOptions(dim)));
    gate_up = register_module("gate_up", torch::nn::Linear(dim, 4 * dim));
    act = register_module("act", kl::SiluAndMul());
    down = register_module("down", torch::nn::Linear(2 * dim, dim));
  }
  at::Tensor forward(const at::Tensor& x) { return x + down(act(gate_up(norm(x)))); }

  int64_t dim;
  kl::RMSNorm norm{nullptr};
  torch::nn::Linear gate_up{nullptr};
  kl::SiluAndMul act{nullptr};
  torch::nn::Linear down{nullptr};
};
TORCH_MODULE(Mlp);

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: layers_app MAPPING.toml\n");
    return 2;
  }
  try {
    Mlp plain(64);
    const auto kernelized = std::dynamic_pointer_cast<MlpImpl>(plain->clone());
    const auto report = kl::kernelize(*kernelized, kl::KernelMapping::from_file(argv[1]),
                                      {.mode = kl::Mode::inference});
    for (const auto& layer : report.layers) {
      std::printf("%-5s %-11s %s\n", layer.module.c_str(), layer.layer_name.c_str(),
                  layer.bound ? layer.kernel.c_str()
                              : ("own forward (" + layer.fallback_reason + ")").c_str());
    }
    const at::Tensor x = at::randn({2, 16, 64});
    const double difference =
        (kernelized->forward(x) - plain->forward(x)).abs().max().item<double>();
    std::printf("kernelized %zu of %zu layers; max |kernelized - ATen| = %.3g\n",
                report.bound_count(), report.layers.size(), difference);
    return difference < 1e-4 ? 0 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "layers_app: %s\n", error.what());
    return 1;
  }
}
