// Layer modules for libtorch models whose forward a Hub kernel can replace (kernelize, in
// <kernelhub/kernelize.hpp>): the layers transformers marks with use_kernel_forward_from_hub.
//
//   namespace kl = kernelhub::layers;
//   kl::RMSNorm norm(kl::RMSNormOptions(4096).eps(1e-6));   // Llama semantics
//   kl::SiluAndMul act;                                      // silu(x[..., :d]) * x[..., d:]
//   auto [q2, k2] = kl::ApplyRotary()->forward(q, k, cos, sin);
//
// Each computes with ATen until kernelize binds it to a kernel, and again after a kernel is
// unbound. A module carries its layer name (the key of the mapping, e.g. "RMSNorm") and the
// attributes a kernel's layer reads by name, as the Python layer classes read them from the
// module they replace: `weight`, `bias`, `variance_epsilon`, `eps`, `threshold`.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

namespace kernelhub::layers {

// The forward a layer has, which a kernel's layer must have too (kernels checks the Python
// signatures the same way).
enum class LayerSignature {
  tensor,  // forward(x) -> Tensor
  rotary,  // forward(q, k, cos, sin, unsqueeze_dim = 1) -> (q, k)
};

class LayerKernel;  // kernelhub/layers/layer_kernel.hpp

// What kernelize looks for in a module tree.
class KernelizableLayer {
 public:
  virtual ~KernelizableLayer() = default;
  KernelizableLayer(const KernelizableLayer&) = default;
  KernelizableLayer& operator=(const KernelizableLayer&) = default;

  const std::string& kernel_layer_name() const { return layer_name_; }
  virtual LayerSignature signature() const = 0;
  // An attribute by the name a kernel's layer reads it; nullopt when the module has none.
  virtual std::optional<at::Tensor> tensor_attribute(std::string_view /*name*/) const {
    return std::nullopt;
  }
  virtual std::optional<double> float_attribute(std::string_view /*name*/) const {
    return std::nullopt;
  }
  // Every attribute name the two above answer: what a Python layer class is given.
  virtual std::vector<std::string_view> attribute_names() const { return {}; }
  // The module's is_training(), which a Python layer class sees as self.training.
  virtual bool training_mode() const = 0;

  // The bound kernel; null: the module's own ATen forward.
  const std::shared_ptr<const LayerKernel>& kernel() const { return kernel_; }
  void set_kernel(std::shared_ptr<const LayerKernel> kernel) { kernel_ = std::move(kernel); }

 protected:
  explicit KernelizableLayer(std::string layer_name) : layer_name_(std::move(layer_name)) {}

 private:
  std::string layer_name_;
  std::shared_ptr<const LayerKernel> kernel_;
};

// ---- Norms ---------------------------------------------------------------------------------

struct RMSNormOptions {
  explicit RMSNormOptions(int64_t hidden_size) : hidden_size_(hidden_size) {}
  TORCH_ARG(int64_t, hidden_size);
  TORCH_ARG(double, eps) = 1e-6;
  TORCH_ARG(std::string, layer_name) = "RMSNorm";
};

// LlamaRMSNorm: x in float32, times rsqrt(mean(x^2) + eps), back to x's dtype, times weight.
// Attributes: weight, variance_epsilon (and eps).
class RMSNormImpl : public torch::nn::Cloneable<RMSNormImpl>, public KernelizableLayer {
 public:
  explicit RMSNormImpl(const RMSNormOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& hidden_states);
  at::Tensor aten_forward(const at::Tensor& hidden_states) const;

  LayerSignature signature() const override { return LayerSignature::tensor; }
  std::optional<at::Tensor> tensor_attribute(std::string_view name) const override;
  std::optional<double> float_attribute(std::string_view name) const override;
  std::vector<std::string_view> attribute_names() const override;
  bool training_mode() const override { return is_training(); }

  RMSNormOptions options;
  at::Tensor weight;
};
TORCH_MODULE(RMSNorm);

struct LayerNormOptions {
  explicit LayerNormOptions(int64_t hidden_size) : hidden_size_(hidden_size) {}
  TORCH_ARG(int64_t, hidden_size);
  TORCH_ARG(double, eps) = 1e-5;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(std::string, layer_name) = "LayerNorm";
};

// LayerNorm over the last dimension. Attributes: weight, bias (when it has one), eps and
// variance_epsilon (the same value: torch names it eps, the Hub's layers variance_epsilon).
class LayerNormImpl : public torch::nn::Cloneable<LayerNormImpl>, public KernelizableLayer {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  void reset() override;
  at::Tensor forward(const at::Tensor& hidden_states);
  at::Tensor aten_forward(const at::Tensor& hidden_states) const;

  LayerSignature signature() const override { return LayerSignature::tensor; }
  std::optional<at::Tensor> tensor_attribute(std::string_view name) const override;
  std::optional<double> float_attribute(std::string_view name) const override;
  std::vector<std::string_view> attribute_names() const override;
  bool training_mode() const override { return is_training(); }

  LayerNormOptions options;
  at::Tensor weight;
  at::Tensor bias;  // undefined without one
};
TORCH_MODULE(LayerNorm);

// ---- Activations ---------------------------------------------------------------------------

enum class Activation {
  silu_and_mul,       // silu(x[..., :d]) * x[..., d:]
  gelu_and_mul,       // gelu(x[..., :d]) * x[..., d:]
  gelu_tanh_and_mul,  // gelu_tanh(x[..., :d]) * x[..., d:]
  silu,
  gelu,
  gelu_tanh,   // gelu with the tanh approximation
  fast_gelu,   // 0.5x(1 + tanh(0.7978845608 x (1 + 0.044715 x^2)))
  new_gelu,    // 0.5x(1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  quick_gelu,  // x sigmoid(1.702 x)
};
// The layer name transformers gives each ("SiluAndMul", "SiLU", "GeLU", "FastGELU", ...).
std::string_view default_layer_name(Activation activation);
at::Tensor aten_activation(Activation activation, const at::Tensor& x);

struct ActivationOptions {
  TORCH_ARG(std::string, layer_name) = "";  // empty: default_layer_name
};

template <Activation kind>
class ActivationImpl : public torch::nn::Cloneable<ActivationImpl<kind>>, public KernelizableLayer {
 public:
  explicit ActivationImpl(const ActivationOptions& options = {});
  void reset() override {}
  at::Tensor forward(const at::Tensor& x);
  LayerSignature signature() const override { return LayerSignature::tensor; }
  bool training_mode() const override { return this->is_training(); }
  static constexpr Activation activation = kind;
};

using SiluAndMulImpl = ActivationImpl<Activation::silu_and_mul>;
using GeluAndMulImpl = ActivationImpl<Activation::gelu_and_mul>;
using GeluTanhAndMulImpl = ActivationImpl<Activation::gelu_tanh_and_mul>;
using SiluImpl = ActivationImpl<Activation::silu>;
using GeluImpl = ActivationImpl<Activation::gelu>;
using GeluTanhImpl = ActivationImpl<Activation::gelu_tanh>;
using FastGELUImpl = ActivationImpl<Activation::fast_gelu>;
using NewGELUImpl = ActivationImpl<Activation::new_gelu>;
using QuickGELUImpl = ActivationImpl<Activation::quick_gelu>;
TORCH_MODULE(SiluAndMul);
TORCH_MODULE(GeluAndMul);
TORCH_MODULE(GeluTanhAndMul);
TORCH_MODULE(Silu);
TORCH_MODULE(Gelu);
TORCH_MODULE(GeluTanh);
TORCH_MODULE(FastGELU);
TORCH_MODULE(NewGELU);
TORCH_MODULE(QuickGELU);

extern template class ActivationImpl<Activation::silu_and_mul>;
extern template class ActivationImpl<Activation::gelu_and_mul>;
extern template class ActivationImpl<Activation::gelu_tanh_and_mul>;
extern template class ActivationImpl<Activation::silu>;
extern template class ActivationImpl<Activation::gelu>;
extern template class ActivationImpl<Activation::gelu_tanh>;
extern template class ActivationImpl<Activation::fast_gelu>;
extern template class ActivationImpl<Activation::new_gelu>;
extern template class ActivationImpl<Activation::quick_gelu>;

// ---- Rotary embeddings ---------------------------------------------------------------------

struct ApplyRotaryOptions {
  TORCH_ARG(std::string, layer_name) = "rotary_pos_emb";
};

// transformers' apply_rotary_pos_emb: cos and sin unsqueezed at unsqueeze_dim, then
// q * cos + rotate_half(q) * sin (and k alike), rotate_half(x) = cat(-x2, x1).
class ApplyRotaryImpl : public torch::nn::Cloneable<ApplyRotaryImpl>, public KernelizableLayer {
 public:
  explicit ApplyRotaryImpl(const ApplyRotaryOptions& options = {});
  void reset() override {}
  std::tuple<at::Tensor, at::Tensor> forward(const at::Tensor& q, const at::Tensor& k,
                                             const at::Tensor& cos, const at::Tensor& sin,
                                             int64_t unsqueeze_dim = 1);
  static std::tuple<at::Tensor, at::Tensor> aten_forward(const at::Tensor& q, const at::Tensor& k,
                                                         const at::Tensor& cos,
                                                         const at::Tensor& sin,
                                                         int64_t unsqueeze_dim);
  LayerSignature signature() const override { return LayerSignature::rotary; }
  bool training_mode() const override { return is_training(); }
};
TORCH_MODULE(ApplyRotary);

}  // namespace kernelhub::layers
