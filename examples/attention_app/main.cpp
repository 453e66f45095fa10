// A tiny transformer-style model whose attention layers run through kernelhub's dispatcher.
// It runs once on the `native` backend, then switches every layer to `flash_hub` (which
// fetches kernels-community/flash-attn2 through kernelhubd, verifies it and dlopens it
// without Python), runs again and prints the largest difference between the two.
#include <kernelhub/attention.hpp>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>

#include <ATen/ops/abs.h>
#include <ATen/ops/randn.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

namespace ka = kernelhub::attention;

// x -> qkv projection -> attention -> output projection, with a residual.
class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(int64_t dim, int64_t heads)
      : heads_(heads),
        qkv_(register_module("qkv", torch::nn::Linear(dim, 3 * dim))),
        attention_(register_module("attention", ka::Attention())),
        out_(register_module("out", torch::nn::Linear(dim, dim))) {}

  at::Tensor forward(const at::Tensor& x) {
    const int64_t batch = x.size(0);
    const int64_t seq = x.size(1);
    const int64_t head_dim = x.size(2) / heads_;
    auto qkv = qkv_(x).view({batch, seq, 3, heads_, head_dim});
    auto attended = attention_->forward(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2));
    return x + out_(attended.reshape({batch, seq, heads_ * head_dim}));
  }

 private:
  int64_t heads_;
  torch::nn::Linear qkv_;
  ka::Attention attention_;
  torch::nn::Linear out_;
};
TORCH_MODULE(Block);

class TinyModelImpl : public torch::nn::Module {
 public:
  TinyModelImpl(int64_t dim, int64_t heads, int layers) {
    for (int i = 0; i < layers; ++i) blocks_->push_back(Block(dim, heads));
    register_module("blocks", blocks_);
  }
  at::Tensor forward(at::Tensor x) {
    for (auto& block : *blocks_) x = block->as<BlockImpl>()->forward(x);
    return x;
  }

 private:
  torch::nn::ModuleList blocks_;
};
TORCH_MODULE(TinyModel);

int main(int argc, char** argv) {
  const std::string backend = argc > 1 ? argv[1] : "flash_hub";
  try {
    at::manual_seed(0);
    TinyModel model(/*dim=*/256, /*heads=*/4, /*layers=*/2);
    model->to(at::kBFloat16);
    const at::Tensor x = at::randn({2, 128, 256}).to(at::kBFloat16);

    const at::Tensor reference = model->forward(x);  // layers unset: the process default, native
    std::printf("native: ran %d layers (backend %s)\n", 2, ka::active_backend().c_str());

    ka::set_attention_backend(*model, backend);  // fetch + verify + dlopen happen here
    const at::Tensor result = model->forward(x);
    const double max_diff =
        at::abs(result.to(at::kFloat) - reference.to(at::kFloat)).max().item<double>();
    std::printf("%s: ran %d layers; largest difference from native: %.6g\n", backend.c_str(), 2,
                max_diff);
    // bf16 attention through a different kernel: differences of a few bf16 ulps are expected.
    if (!(max_diff < 0.1)) {
      std::fprintf(stderr, "attention_app: %s differs from native by %g\n", backend.c_str(),
                   max_diff);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attention_app: %s\n", e.what());
    return 1;
  }
}
