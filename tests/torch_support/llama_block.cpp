#include "torch_support/llama_block.hpp"

#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/outer.h>
#include <ATen/ops/pow.h>

namespace kernelhub::testing {

void LlamaBlockImpl::reset() {
  namespace nn = torch::nn;
  namespace kl = kernelhub::layers;
  input_norm = register_module("input_norm", kl::RMSNorm(kl::RMSNormOptions(hidden)));
  q_proj = register_module("q_proj", nn::Linear(nn::LinearOptions(hidden, hidden).bias(false)));
  k_proj = register_module("k_proj", nn::Linear(nn::LinearOptions(hidden, hidden).bias(false)));
  v_proj = register_module("v_proj", nn::Linear(nn::LinearOptions(hidden, hidden).bias(false)));
  rotary = register_module("rotary", kl::ApplyRotary());
  attention = register_module("attention", kernelhub::attention::Attention());
  o_proj = register_module("o_proj", nn::Linear(nn::LinearOptions(hidden, hidden).bias(false)));
  post_norm = register_module("post_norm", kl::RMSNorm(kl::RMSNormOptions(hidden)));
  gate_up = register_module("gate_up",
                            nn::Linear(nn::LinearOptions(hidden, 2 * intermediate).bias(false)));
  act = register_module("act", kl::SiluAndMul());
  down = register_module("down", nn::Linear(nn::LinearOptions(intermediate, hidden).bias(false)));
}

at::Tensor LlamaBlockImpl::forward(const at::Tensor& x, const at::Tensor& cos,
                                   const at::Tensor& sin) {
  const int64_t batch = x.size(0);
  const int64_t seq = x.size(1);
  const int64_t head_dim = hidden / heads;
  const auto heads_first = [&](const at::Tensor& t) {
    return t.view({batch, seq, heads, head_dim}).transpose(1, 2);
  };
  const at::Tensor h = input_norm(x);
  auto [q, k] = rotary(heads_first(q_proj(h)), heads_first(k_proj(h)), cos, sin);
  const at::Tensor v = v_proj(h).view({batch, seq, heads, head_dim});
  const at::Tensor attended = attention(q.transpose(1, 2), k.transpose(1, 2), v);
  const at::Tensor residual = x + o_proj(attended.reshape({batch, seq, hidden}));
  return residual + down(act(gate_up(post_norm(residual))));
}

std::tuple<at::Tensor, at::Tensor> rotary_tables(int64_t batch, int64_t seq, int64_t head_dim) {
  const at::Tensor inverse = 1.0 / at::pow(10000.0, at::arange(0, head_dim, 2, at::kFloat) /
                                                        static_cast<double>(head_dim));
  const at::Tensor freqs = at::outer(at::arange(seq, at::kFloat), inverse);
  const at::Tensor angles = at::cat({freqs, freqs}, -1).unsqueeze(0).expand({batch, seq, head_dim});
  return {angles.cos(), angles.sin()};
}

}  // namespace kernelhub::testing
