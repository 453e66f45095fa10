// Native adapters: the C++ twin of a kernels-community `layers.py` class over the kernel's
// ops, each op found with the schema the adapter unboxes by (KernelOp::find_with_schema), so
// a build for another interface is refused at load and never called.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/ivalue.h>

#include "kernelhub/layers/layer_kernel.hpp"
#include "kernelhub/loader/kernel_ops.hpp"

namespace kernelhub::layers::detail {

// What an adapter is built from: the loaded kernel and how to name it.
struct NativeKernel {
  std::shared_ptr<const loader::LoadedKernel> loaded;
  std::string description;  // LayerKernel::describe()
};

class NativeLayer : public LayerKernel {
 public:
  struct Traits {
    LayerSignature signature = LayerSignature::tensor;
    bool has_backward = false;
    bool can_torch_compile = true;
    std::vector<std::string> tensor_attributes = {};  // read from the module at every call
    std::vector<std::string> float_attributes = {};
  };
  NativeLayer(NativeKernel kernel, Traits traits)
      : kernel_(std::move(kernel)), traits_(std::move(traits)) {}

  LayerSignature signature() const override { return traits_.signature; }
  bool has_backward() const override { return traits_.has_backward; }
  bool can_torch_compile() const override { return traits_.can_torch_compile; }
  const std::string& describe() const override { return kernel_.description; }
  Result<void> check_module(const KernelizableLayer& module) const override;

 protected:
  const loader::LoadedKernel& loaded() const { return *kernel_.loaded; }

 private:
  NativeKernel kernel_;
  Traits traits_;
};

// A kernel's op called boxed on a stack that holds every argument: boxed, because builds of
// one kernel register different C++ signatures (full or stable ABI) for the same schema,
// which find_with_schema checked.
class CheckedOp {
 public:
  static Result<CheckedOp> find(const loader::LoadedKernel& kernel, std::string_view name,
                                std::string_view schema) {
    KH_TRY_ASSIGN(auto op, loader::KernelOp::find_with_schema(kernel, name, schema));
    return CheckedOp(std::move(op));
  }
  // The outputs replace the arguments on `stack`.
  void call(std::vector<c10::IValue>& stack) const { op_.handle().callBoxed(stack); }

 private:
  explicit CheckedOp(loader::KernelOp op) : op_(std::move(op)) {}
  loader::KernelOp op_;
};

// The adapters by the layer class name they stand for: null when `layer` is none of theirs,
// an error when it is and the kernel's ops do not fit.
Result<std::shared_ptr<const LayerKernel>> make_activation_layer(const NativeKernel& kernel,
                                                                 std::string_view layer);
Result<std::shared_ptr<const LayerKernel>> make_norm_layer(const NativeKernel& kernel,
                                                           std::string_view layer);
Result<std::shared_ptr<const LayerKernel>> make_rotary_layer(const NativeKernel& kernel,
                                                             std::string_view layer);
// All of the above: the native adapter for `layer`; op_not_found when none stands for it.
Result<std::shared_ptr<const LayerKernel>> make_native_layer(const NativeKernel& kernel,
                                                             std::string_view layer);

}  // namespace kernelhub::layers::detail
