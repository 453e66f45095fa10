// kernels-community/rotary's apply_rotary_transformers (rotary/torch-ext/rotary/layers.py):
// cos and sin unsqueezed and trimmed to half the head dimension, q and k cloned, each rotated
// in place by apply_rotary on its two halves.
#include "native_layer.hpp"

namespace kernelhub::layers::detail {
namespace {

constexpr std::string_view kApplyRotarySchema =
    "apply_rotary(Tensor x1, Tensor x2, Tensor cos, Tensor sin, Tensor! out1, Tensor! out2, bool "
    "conj) -> ()";

class RotaryLayer final : public NativeLayer {
 public:
  RotaryLayer(const NativeKernel& kernel, CheckedOp op)
      : NativeLayer(kernel, {.signature = LayerSignature::rotary}), op_(std::move(op)) {}

  std::tuple<at::Tensor, at::Tensor> forward(const KernelizableLayer& /*module*/,
                                             const at::Tensor& q, const at::Tensor& k,
                                             const at::Tensor& cos, const at::Tensor& sin,
                                             int64_t unsqueeze_dim) const override {
    at::Tensor c = cos.unsqueeze(unsqueeze_dim);
    at::Tensor s = sin.unsqueeze(unsqueeze_dim);
    at::Tensor q_rotated = q.clone();
    at::Tensor k_rotated = k.clone();
    const int64_t half = q.size(-1) / 2;
    if (c.size(-1) != half) {
      c = c.narrow(-1, 0, half);
      s = s.narrow(-1, 0, half);
    }
    rotate(q_rotated, half, c, s);
    rotate(k_rotated, half, c, s);
    return {q_rotated, k_rotated};
  }

 private:
  void rotate(const at::Tensor& x, int64_t half, const at::Tensor& cos,
              const at::Tensor& sin) const {
    const at::Tensor x1 = x.narrow(-1, 0, half);
    const at::Tensor x2 = x.narrow(-1, half, half);
    std::vector<c10::IValue> stack{x1, x2, cos, sin, x1, x2, false};
    op_.call(stack);
  }

  CheckedOp op_;
};

}  // namespace

Result<std::shared_ptr<const LayerKernel>> make_rotary_layer(const NativeKernel& kernel,
                                                             std::string_view layer) {
  if (layer != "apply_rotary_transformers") return std::shared_ptr<const LayerKernel>();
  KH_TRY_ASSIGN(auto op, CheckedOp::find(*kernel.loaded, "apply_rotary", kApplyRotarySchema));
  return std::shared_ptr<const LayerKernel>(std::make_shared<RotaryLayer>(kernel, std::move(op)));
}

}  // namespace kernelhub::layers::detail
