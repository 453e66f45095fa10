// The layer modules' own forwards (ATen) against the formulas of the layers they mirror
// (transformers' LlamaRMSNorm, nn.LayerNorm, its activations and apply_rotary_pos_emb), and
// what they expose to kernels: layer names and attributes.
#include <cmath>

#include <ATen/ops/allclose.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/erf.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/tanh.h>

#include "kernelhub/layers.hpp"

#include <catch2/catch.hpp>

namespace kl = kernelhub::layers;

namespace {

bool close(const at::Tensor& a, const at::Tensor& b, double atol = 1e-6) {
  return at::allclose(a.to(at::kFloat), b.to(at::kFloat), 1e-5, atol);
}

// gelu(x) = x * Phi(x), written out.
at::Tensor gelu_exact(const at::Tensor& x) { return 0.5 * x * (1.0 + at::erf(x / std::sqrt(2.0))); }
at::Tensor gelu_tanh(const at::Tensor& x) {
  return 0.5 * x * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

}  // namespace

TEST_CASE("RMSNorm computes LlamaRMSNorm in float32 and returns the input dtype", "[layers]") {
  kl::RMSNorm norm(kl::RMSNormOptions(64).eps(1e-5));
  norm->weight.data().copy_(at::randn({64}));
  const at::Tensor x = at::randn({2, 5, 64});
  const at::Tensor expected = norm->weight * (x / (x.pow(2).mean(-1, true) + 1e-5).sqrt());
  CHECK(close(norm(x), expected, 1e-5));

  const at::Tensor half = x.to(at::kBFloat16);
  const at::Tensor out = norm(half);
  CHECK(out.scalar_type() == at::kFloat);  // bf16 normalised, times a float32 weight
  CHECK(close(out, expected, 3e-2));

  CHECK(norm->kernel_layer_name() == "RMSNorm");
  CHECK(norm->signature() == kl::LayerSignature::tensor);
  CHECK(norm->float_attribute("variance_epsilon") == 1e-5);
  CHECK(norm->float_attribute("eps") == 1e-5);
  CHECK(norm->tensor_attribute("weight")->is_same(norm->weight));
  CHECK_FALSE(norm->tensor_attribute("bias"));
  CHECK(norm->named_parameters().contains("weight"));
}

TEST_CASE("LayerNorm matches the formula, with and without a bias", "[layers]") {
  kl::LayerNorm norm(kl::LayerNormOptions(32).eps(1e-5));
  norm->weight.data().copy_(at::randn({32}));
  norm->bias.data().copy_(at::randn({32}));
  const at::Tensor x = at::randn({7, 32});
  const at::Tensor mean = x.mean(-1, true);
  const at::Tensor var = (x - mean).pow(2).mean(-1, true);
  CHECK(close(norm(x), (x - mean) / (var + 1e-5).sqrt() * norm->weight + norm->bias, 1e-5));
  CHECK(norm->attribute_names().size() == 4);

  kl::LayerNorm plain(kl::LayerNormOptions(32).bias(false).layer_name("MyNorm"));
  CHECK_FALSE(plain->bias.defined());
  CHECK_FALSE(plain->tensor_attribute("bias"));
  CHECK(plain->kernel_layer_name() == "MyNorm");
  CHECK(close(plain(x), (x - mean) / (var + 1e-5).sqrt(), 1e-5));
}

TEST_CASE("the activations match transformers' formulas", "[layers]") {
  const at::Tensor x = at::randn({3, 4, 16});
  const at::Tensor gate = x.narrow(-1, 0, 8);
  const at::Tensor up = x.narrow(-1, 8, 8);

  CHECK(close(kl::SiluAndMul()(x), gate * at::sigmoid(gate) * up));
  CHECK(close(kl::GeluAndMul()(x), gelu_exact(gate) * up));
  CHECK(close(kl::GeluTanhAndMul()(x), gelu_tanh(gate) * up, 1e-5));
  CHECK(kl::SiluAndMul()(x).sizes() == at::IntArrayRef({3, 4, 8}));

  CHECK(close(kl::Silu()(x), x * at::sigmoid(x)));
  CHECK(close(kl::Gelu()(x), gelu_exact(x)));
  CHECK(close(kl::GeluTanh()(x), gelu_tanh(x), 1e-5));
  CHECK(close(kl::FastGELU()(x),
              0.5 * x * (1.0 + at::tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))));
  CHECK(close(kl::NewGELU()(x), gelu_tanh(x), 1e-5));
  CHECK(close(kl::QuickGELU()(x), x * at::sigmoid(1.702 * x)));
}

TEST_CASE("each module carries transformers' layer name unless given another", "[layers]") {
  CHECK(kl::SiluAndMul()->kernel_layer_name() == "SiluAndMul");
  CHECK(kl::GeluAndMul()->kernel_layer_name() == "GeluAndMul");
  CHECK(kl::GeluTanhAndMul()->kernel_layer_name() == "GeluTanhAndMul");
  CHECK(kl::Silu()->kernel_layer_name() == "SiLU");
  CHECK(kl::Gelu()->kernel_layer_name() == "GeLU");
  CHECK(kl::GeluTanh()->kernel_layer_name() == "GeluTanh");
  CHECK(kl::FastGELU()->kernel_layer_name() == "FastGELU");
  CHECK(kl::NewGELU()->kernel_layer_name() == "NewGELU");
  CHECK(kl::QuickGELU()->kernel_layer_name() == "QuickGELU");
  CHECK(kl::ApplyRotary()->kernel_layer_name() == "rotary_pos_emb");
  CHECK(kl::Silu(kl::ActivationOptions().layer_name("Act"))->kernel_layer_name() == "Act");
  CHECK(kl::ApplyRotary()->signature() == kl::LayerSignature::rotary);
}

TEST_CASE("ApplyRotary is transformers' apply_rotary_pos_emb", "[layers]") {
  // (batch, heads, seq, head_dim) with (batch, seq, head_dim) cos/sin, unsqueezed at 1.
  const at::Tensor q = at::randn({2, 4, 5, 16});
  const at::Tensor k = at::randn({2, 2, 5, 16});
  const at::Tensor freqs = at::randn({2, 5, 8});
  const at::Tensor cos = at::cat({freqs, freqs}, -1).cos();
  const at::Tensor sin = at::cat({freqs, freqs}, -1).sin();
  const auto rotate_half = [](const at::Tensor& t) {
    return at::cat({-t.narrow(-1, 8, 8), t.narrow(-1, 0, 8)}, -1);
  };
  auto [q2, k2] = kl::ApplyRotary()(q, k, cos, sin);
  CHECK(close(q2, q * cos.unsqueeze(1) + rotate_half(q) * sin.unsqueeze(1)));
  CHECK(close(k2, k * cos.unsqueeze(1) + rotate_half(k) * sin.unsqueeze(1)));
  // A rotation keeps each pair's norm.
  CHECK(close(q2.pow(2).sum(-1), q.pow(2).sum(-1), 1e-4));
}

TEST_CASE("a cloned module keeps its layer name and parameters", "[layers]") {
  kl::RMSNorm norm(kl::RMSNormOptions(8).layer_name("Norm"));
  norm->weight.data().fill_(2.0);
  auto copy = std::dynamic_pointer_cast<kl::RMSNormImpl>(norm->clone());
  REQUIRE(copy);
  CHECK(copy->kernel_layer_name() == "Norm");
  CHECK(copy->weight.data_ptr() != norm->weight.data_ptr());
  CHECK(close(copy->weight, norm->weight));
}
