// The layer modules' ATen forwards, and the dispatch to a bound kernel.
#include <cmath>

#include <ATen/ops/cat.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/zeros.h>

#include "kernelhub/layers.hpp"
#include "kernelhub/layers/layer_kernel.hpp"

namespace kernelhub::layers {
namespace {

// x[..., :d] and x[..., d:] of a gated activation's input.
std::pair<at::Tensor, at::Tensor> halves(const at::Tensor& x) {
  const int64_t d = x.size(-1) / 2;
  return {x.narrow(-1, 0, d), x.narrow(-1, d, d)};
}

}  // namespace

// ---- RMSNorm -------------------------------------------------------------------------------

RMSNormImpl::RMSNormImpl(const RMSNormOptions& norm_options)
    : KernelizableLayer(norm_options.layer_name()), options(norm_options) {
  reset();
}

void RMSNormImpl::reset() {
  weight = register_parameter("weight", at::ones({options.hidden_size()}));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& hidden_states) {
  if (const auto& bound = kernel()) return bound->forward(*this, hidden_states);
  return aten_forward(hidden_states);
}

at::Tensor RMSNormImpl::aten_forward(const at::Tensor& hidden_states) const {
  const auto dtype = hidden_states.scalar_type();
  const at::Tensor x = hidden_states.to(at::kFloat);
  const at::Tensor variance = x.pow(2).mean(-1, /*keepdim=*/true);
  return weight * (x * at::rsqrt(variance + options.eps())).to(dtype);
}

std::optional<at::Tensor> RMSNormImpl::tensor_attribute(std::string_view name) const {
  if (name == "weight") return weight;
  return std::nullopt;
}

std::optional<double> RMSNormImpl::float_attribute(std::string_view name) const {
  if (name == "variance_epsilon" || name == "eps") return options.eps();
  return std::nullopt;
}

std::vector<std::string_view> RMSNormImpl::attribute_names() const {
  return {"weight", "variance_epsilon", "eps"};
}

// ---- LayerNorm -----------------------------------------------------------------------------

LayerNormImpl::LayerNormImpl(const LayerNormOptions& norm_options)
    : KernelizableLayer(norm_options.layer_name()), options(norm_options) {
  reset();
}

void LayerNormImpl::reset() {
  weight = register_parameter("weight", at::ones({options.hidden_size()}));
  if (options.bias()) bias = register_parameter("bias", at::zeros({options.hidden_size()}));
}

at::Tensor LayerNormImpl::forward(const at::Tensor& hidden_states) {
  if (const auto& bound = kernel()) return bound->forward(*this, hidden_states);
  return aten_forward(hidden_states);
}

at::Tensor LayerNormImpl::aten_forward(const at::Tensor& hidden_states) const {
  return at::layer_norm(hidden_states, {options.hidden_size()}, weight,
                        bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt,
                        options.eps());
}

std::optional<at::Tensor> LayerNormImpl::tensor_attribute(std::string_view name) const {
  if (name == "weight") return weight;
  if (name == "bias" && bias.defined()) return bias;
  return std::nullopt;
}

std::optional<double> LayerNormImpl::float_attribute(std::string_view name) const {
  if (name == "variance_epsilon" || name == "eps") return options.eps();
  return std::nullopt;
}

std::vector<std::string_view> LayerNormImpl::attribute_names() const {
  if (bias.defined()) return {"weight", "bias", "variance_epsilon", "eps"};
  return {"weight", "variance_epsilon", "eps"};
}

// ---- Activations ---------------------------------------------------------------------------

std::string_view default_layer_name(Activation activation) {
  switch (activation) {
    case Activation::silu_and_mul:
      return "SiluAndMul";
    case Activation::gelu_and_mul:
      return "GeluAndMul";
    case Activation::gelu_tanh_and_mul:
      return "GeluTanhAndMul";
    case Activation::silu:
      return "SiLU";
    case Activation::gelu:
      return "GeLU";
    case Activation::gelu_tanh:
      return "GeluTanh";
    case Activation::fast_gelu:
      return "FastGELU";
    case Activation::new_gelu:
      return "NewGELU";
    case Activation::quick_gelu:
      return "QuickGELU";
  }
  return "";
}

at::Tensor aten_activation(Activation activation, const at::Tensor& x) {
  switch (activation) {
    case Activation::silu_and_mul: {
      const auto [gate, up] = halves(x);
      return at::silu(gate) * up;
    }
    case Activation::gelu_and_mul: {
      const auto [gate, up] = halves(x);
      return at::gelu(gate) * up;
    }
    case Activation::gelu_tanh_and_mul: {
      const auto [gate, up] = halves(x);
      return at::gelu(gate, "tanh") * up;
    }
    case Activation::silu:
      return at::silu(x);
    case Activation::gelu:
      return at::gelu(x);
    case Activation::gelu_tanh:
      return at::gelu(x, "tanh");
    case Activation::fast_gelu:
      return 0.5 * x * (1.0 + at::tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)));
    case Activation::new_gelu:
      return 0.5 * x * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x.pow(3.0))));
    case Activation::quick_gelu:
      return x * at::sigmoid(1.702 * x);
  }
  TORCH_CHECK(false, "unknown activation");
}

template <Activation kind>
ActivationImpl<kind>::ActivationImpl(const ActivationOptions& options)
    : KernelizableLayer(options.layer_name().empty() ? std::string(default_layer_name(kind))
                                                     : options.layer_name()) {}

template <Activation kind>
at::Tensor ActivationImpl<kind>::forward(const at::Tensor& x) {
  if (const auto& bound = kernel()) return bound->forward(*this, x);
  return aten_activation(kind, x);
}

template class ActivationImpl<Activation::silu_and_mul>;
template class ActivationImpl<Activation::gelu_and_mul>;
template class ActivationImpl<Activation::gelu_tanh_and_mul>;
template class ActivationImpl<Activation::silu>;
template class ActivationImpl<Activation::gelu>;
template class ActivationImpl<Activation::gelu_tanh>;
template class ActivationImpl<Activation::fast_gelu>;
template class ActivationImpl<Activation::new_gelu>;
template class ActivationImpl<Activation::quick_gelu>;

// ---- Rotary --------------------------------------------------------------------------------

ApplyRotaryImpl::ApplyRotaryImpl(const ApplyRotaryOptions& options)
    : KernelizableLayer(options.layer_name()) {}

std::tuple<at::Tensor, at::Tensor> ApplyRotaryImpl::forward(const at::Tensor& q,
                                                            const at::Tensor& k,
                                                            const at::Tensor& cos,
                                                            const at::Tensor& sin,
                                                            int64_t unsqueeze_dim) {
  if (const auto& bound = kernel()) return bound->forward(*this, q, k, cos, sin, unsqueeze_dim);
  return aten_forward(q, k, cos, sin, unsqueeze_dim);
}

std::tuple<at::Tensor, at::Tensor> ApplyRotaryImpl::aten_forward(const at::Tensor& q,
                                                                 const at::Tensor& k,
                                                                 const at::Tensor& cos,
                                                                 const at::Tensor& sin,
                                                                 int64_t unsqueeze_dim) {
  const at::Tensor c = cos.unsqueeze(unsqueeze_dim);
  const at::Tensor s = sin.unsqueeze(unsqueeze_dim);
  const auto rotate_half = [](const at::Tensor& x) {
    const auto [x1, x2] = halves(x);
    return at::cat({at::neg(x2), x1}, -1);
  };
  return {q * c + rotate_half(q) * s, k * c + rotate_half(k) * s};
}

}  // namespace kernelhub::layers
