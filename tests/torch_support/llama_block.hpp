// A small Llama-style decoder block built from the layer modules and kernelhub's Attention:
// RMSNorm, q/k/v projections, rotary embeddings, attention, o projection, RMSNorm, a gated
// SiLU MLP. Shared by the layer tests, bench/layers_bench.cpp and the GPU check
// (kh_torch_test_support).
#pragma once

#include <tuple>

#include <torch/nn/modules/linear.h>

#include "kernelhub/attention.hpp"
#include "kernelhub/layers.hpp"

namespace kernelhub::testing {

struct LlamaBlockImpl : torch::nn::Cloneable<LlamaBlockImpl> {
  LlamaBlockImpl(int64_t hidden, int64_t heads, int64_t intermediate)
      : hidden(hidden), heads(heads), intermediate(intermediate) {
    reset();
  }

  void reset() override;
  // x: (batch, seq, hidden); cos, sin: (batch, seq, head_dim).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

  int64_t hidden;
  int64_t heads;
  int64_t intermediate;
  kernelhub::layers::RMSNorm input_norm{nullptr};
  torch::nn::Linear q_proj{nullptr};
  torch::nn::Linear k_proj{nullptr};
  torch::nn::Linear v_proj{nullptr};
  kernelhub::layers::ApplyRotary rotary{nullptr};
  kernelhub::attention::Attention attention{nullptr};
  torch::nn::Linear o_proj{nullptr};
  kernelhub::layers::RMSNorm post_norm{nullptr};
  torch::nn::Linear gate_up{nullptr};
  kernelhub::layers::SiluAndMul act{nullptr};
  torch::nn::Linear down{nullptr};
};
TORCH_MODULE(LlamaBlock);

// Llama's rotary tables for positions 0..seq-1: (batch, seq, head_dim), the two halves equal.
std::tuple<at::Tensor, at::Tensor> rotary_tables(int64_t batch, int64_t seq, int64_t head_dim);

}  // namespace kernelhub::testing
