// The norm layers: kernels-community/rmsnorm's RMSNorm (apply_rms_norm with its backward, as
// its layers.py's autograd Function) and kernels-community/layer-norm's LayerNorm and
// LlamaRMSNorm (dropout_add_ln_fwd, forward only).
#include <torch/csrc/autograd/custom_function.h>

#include "native_layer.hpp"

namespace kernelhub::layers::detail {
namespace {

constexpr std::string_view kRmsNormSchema =
    "apply_rms_norm(Tensor hidden_states, Tensor weight, float variance_epsilon) -> Tensor[]";
constexpr std::string_view kRmsNormBackwardSchema =
    "apply_rms_norm_backward(Tensor grad_output, Tensor hidden_states, Tensor weight, Tensor "
    "output, Tensor rstd, float variance_epsilon, bool input_requires_grad, bool "
    "weight_requires_grad) -> Tensor[]";
constexpr std::string_view kLayerNormSchema =
    "dropout_add_ln_fwd(Tensor input, Tensor gamma, Tensor? beta, Tensor? rowscale, Tensor? "
    "colscale, Tensor? x0_subset, Tensor? z_subset, float dropout_p, float epsilon, float "
    "rowscale_const, int z_numrows, Generator? gen, bool residual_in_fp32, bool is_rms_norm) -> "
    "Tensor[]";

std::vector<at::Tensor> call_for_tensors(const CheckedOp& op, std::vector<c10::IValue> stack) {
  op.call(stack);
  return stack.at(0).toTensorVector();
}

class RmsNormLayer;

// rmsnorm's RMSNormFunction: the forward op, and its backward op for the gradients.
struct RmsNormFunction : public torch::autograd::Function<RmsNormFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* context, const at::Tensor& x,
                            const at::Tensor& weight, double epsilon, const RmsNormLayer* layer);
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* context,
                                                 torch::autograd::variable_list grad_outputs);
};

class RmsNormLayer final : public NativeLayer {
 public:
  RmsNormLayer(const NativeKernel& kernel, CheckedOp forward_op, CheckedOp backward_op)
      : NativeLayer(kernel, {.has_backward = true,
                             .can_torch_compile = false,
                             .tensor_attributes = {"weight"},
                             .float_attributes = {"variance_epsilon"}}),
        forward_op_(std::move(forward_op)),
        backward_op_(std::move(backward_op)) {}

  at::Tensor forward(const KernelizableLayer& module, const at::Tensor& x) const override {
    return RmsNormFunction::apply(x, *module.tensor_attribute("weight"),
                                  *module.float_attribute("variance_epsilon"), this);
  }

  std::vector<at::Tensor> run_forward(const at::Tensor& x, const at::Tensor& weight,
                                      double epsilon) const {
    return call_for_tensors(forward_op_, {x, weight, epsilon});
  }
  std::vector<at::Tensor> run_backward(std::vector<c10::IValue> stack) const {
    return call_for_tensors(backward_op_, std::move(stack));
  }

 private:
  CheckedOp forward_op_;
  CheckedOp backward_op_;
};

at::Tensor RmsNormFunction::forward(torch::autograd::AutogradContext* context, const at::Tensor& x,
                                    const at::Tensor& weight, double epsilon,
                                    const RmsNormLayer* layer) {
  auto outputs = layer->run_forward(x, weight, epsilon);
  TORCH_CHECK(outputs.size() == 2, "apply_rms_norm returned ", outputs.size(),
              " tensors, not (output, rstd)");
  context->save_for_backward({x, weight, outputs[0], outputs[1]});
  context->saved_data["epsilon"] = epsilon;
  // The adapter lives as long as the process's kernel cache keeps it, which outlives graphs.
  context->saved_data["layer"] = reinterpret_cast<std::intptr_t>(layer);
  return outputs[0];
}

torch::autograd::variable_list RmsNormFunction::backward(
    torch::autograd::AutogradContext* context, torch::autograd::variable_list grad_outputs) {
  const auto saved = context->get_saved_variables();
  // The pointer forward saved (an IValue holds no raw pointer): the adapter outlives graphs.
  // NOLINTNEXTLINE(performance-no-int-to-ptr)
  const auto* layer = reinterpret_cast<const RmsNormLayer*>(context->saved_data["layer"].toInt());
  auto grads = layer->run_backward({grad_outputs[0], saved[0], saved[1], saved[2], saved[3],
                                    context->saved_data["epsilon"].toDouble(),
                                    context->needs_input_grad(0), context->needs_input_grad(1)});
  TORCH_CHECK(grads.size() == 2, "apply_rms_norm_backward returned ", grads.size(),
              " tensors, not (grad_input, grad_weight)");
  return {grads[0], grads[1], at::Tensor(), at::Tensor()};
}

// layer-norm's LayerNorm / LlamaRMSNorm: rows of the last dimension through
// dropout_add_ln_fwd, no dropout, the output viewed back to the input's shape.
class DropoutAddLayerNorm final : public NativeLayer {
 public:
  DropoutAddLayerNorm(const NativeKernel& kernel, CheckedOp op, bool rms)
      : NativeLayer(kernel,
                    {.tensor_attributes = {"weight"}, .float_attributes = {"variance_epsilon"}}),
        op_(std::move(op)),
        rms_(rms) {}

  at::Tensor forward(const KernelizableLayer& module, const at::Tensor& x) const override {
    // Upstream's LayerNorm passes beta=None; a module with a bias gets it here instead of
    // losing it (docs/layers.md).
    c10::IValue beta;
    if (!rms_) {
      if (auto bias = module.tensor_attribute("bias")) beta = *bias;
    }
    const c10::IValue none;
    std::vector<c10::IValue> stack{x.view({-1, x.size(-1)}),
                                   *module.tensor_attribute("weight"),
                                   beta,
                                   none,
                                   none,
                                   none,
                                   none,
                                   0.0,
                                   *module.float_attribute("variance_epsilon"),
                                   1.0,
                                   x.dim() > 1 ? x.size(1) : x.size(0),
                                   none,
                                   false,
                                   rms_};
    return call_for_tensors(op_, std::move(stack)).at(0).view(x.sizes());
  }

 private:
  CheckedOp op_;
  bool rms_;
};

}  // namespace

Result<std::shared_ptr<const LayerKernel>> make_norm_layer(const NativeKernel& kernel,
                                                           std::string_view layer) {
  if (layer == "RMSNorm") {
    KH_TRY_ASSIGN(auto forward, CheckedOp::find(*kernel.loaded, "apply_rms_norm", kRmsNormSchema));
    KH_TRY_ASSIGN(auto backward, CheckedOp::find(*kernel.loaded, "apply_rms_norm_backward",
                                                 kRmsNormBackwardSchema));
    return std::shared_ptr<const LayerKernel>(
        std::make_shared<RmsNormLayer>(kernel, std::move(forward), std::move(backward)));
  }
  if (layer == "LayerNorm" || layer == "LlamaRMSNorm") {
    KH_TRY_ASSIGN(auto op, CheckedOp::find(*kernel.loaded, "dropout_add_ln_fwd", kLayerNormSchema));
    return std::shared_ptr<const LayerKernel>(
        std::make_shared<DropoutAddLayerNorm>(kernel, std::move(op), layer == "LlamaRMSNorm"));
  }
  return std::shared_ptr<const LayerKernel>();  // not one of this kernel's layers
}

}  // namespace kernelhub::layers::detail
