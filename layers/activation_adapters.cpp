// kernels-community/activation's layers (activation/torch-ext/activation/layers.py): every
// op writes into an `out` the layer allocates, the input made contiguous first.
#include <array>

#include <ATen/ops/empty.h>

#include "native_layer.hpp"

namespace kernelhub::layers::detail {
namespace {

constexpr std::string_view kOutSchema = "(Tensor! out, Tensor input) -> ()";

struct ActivationSpec {
  std::string_view layer;  // the class in layers.py
  std::string_view op;
  bool gated;  // output is the last dimension halved (x[..., :d] gates x[..., d:])
};

constexpr std::array<ActivationSpec, 10> kActivations = {{
    {"SiluAndMul", "silu_and_mul", true},
    {"MulAndSilu", "mul_and_silu", true},
    {"GeluAndMul", "gelu_and_mul", true},
    {"GeluTanhAndMul", "gelu_tanh_and_mul", true},
    {"Silu", "silu", false},
    {"Gelu", "gelu", false},
    {"GeluTanh", "gelu_tanh", false},
    {"FastGELU", "gelu_fast", false},
    {"NewGELU", "gelu_new", false},
    {"QuickGELU", "gelu_quick", false},
}};

at::Tensor output_for(const at::Tensor& input, bool gated) {
  if (!gated) return at::empty(input.sizes(), input.options());
  auto shape = input.sizes().vec();
  shape.back() /= 2;
  return at::empty(shape, input.options());
}

class ActivationLayer final : public NativeLayer {
 public:
  ActivationLayer(const NativeKernel& kernel, bool gated, CheckedOp op)
      : NativeLayer(kernel, {}), gated_(gated), op_(std::move(op)) {}

  at::Tensor forward(const KernelizableLayer& /*module*/, const at::Tensor& x) const override {
    const at::Tensor input = x.is_contiguous() ? x : x.contiguous();
    at::Tensor out = output_for(input, gated_);
    std::vector<c10::IValue> stack{out, input};
    op_.call(stack);
    return out;
  }

 private:
  bool gated_;
  CheckedOp op_;
};

// FatreluAndMul: x[..., :d] where above `threshold` (else 0), times x[..., d:].
class FatreluAndMulLayer final : public NativeLayer {
 public:
  FatreluAndMulLayer(const NativeKernel& kernel, CheckedOp op)
      : NativeLayer(kernel, {.float_attributes = {"threshold"}}), op_(std::move(op)) {}

  at::Tensor forward(const KernelizableLayer& module, const at::Tensor& x) const override {
    const at::Tensor input = x.is_contiguous() ? x : x.contiguous();
    at::Tensor out = output_for(input, /*gated=*/true);
    std::vector<c10::IValue> stack{out, input, *module.float_attribute("threshold")};
    op_.call(stack);
    return out;
  }

 private:
  CheckedOp op_;
};

}  // namespace

Result<std::shared_ptr<const LayerKernel>> make_activation_layer(const NativeKernel& kernel,
                                                                 std::string_view layer) {
  if (layer == "FatreluAndMul") {
    KH_TRY_ASSIGN(auto op, CheckedOp::find(*kernel.loaded, "fatrelu_and_mul",
                                           "fatrelu_and_mul(Tensor! out, Tensor input, float "
                                           "threshold) -> ()"));
    return std::shared_ptr<const LayerKernel>(
        std::make_shared<FatreluAndMulLayer>(kernel, std::move(op)));
  }
  for (const auto& spec : kActivations) {
    if (spec.layer != layer) continue;
    const std::string schema = std::string(spec.op) + std::string(kOutSchema);
    KH_TRY_ASSIGN(auto op, CheckedOp::find(*kernel.loaded, spec.op, schema));
    return std::shared_ptr<const LayerKernel>(
        std::make_shared<ActivationLayer>(kernel, spec.gated, std::move(op)));
  }
  return std::shared_ptr<const LayerKernel>();  // not one of this kernel's layers
}

}  // namespace kernelhub::layers::detail
