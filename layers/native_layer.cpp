// What every native adapter shares: the module check, and the adapter by layer name.
#include "native_layer.hpp"

namespace kernelhub::layers::detail {

Result<void> NativeLayer::check_module(const KernelizableLayer& module) const {
  const auto missing = [&](const std::string& attribute) {
    return fail(ErrorCode::incompatible_kernel, describe() + " reads self." + attribute +
                                                    ", which the module for layer " +
                                                    module.kernel_layer_name() + " does not have");
  };
  for (const auto& name : traits_.tensor_attributes) {
    if (!module.tensor_attribute(name)) return missing(name);
  }
  for (const auto& name : traits_.float_attributes) {
    if (!module.float_attribute(name)) return missing(name);
  }
  return ok();
}

Result<std::shared_ptr<const LayerKernel>> make_native_layer(const NativeKernel& kernel,
                                                             std::string_view layer) {
  for (const auto make : {make_activation_layer, make_norm_layer, make_rotary_layer}) {
    KH_TRY_ASSIGN(auto made, make(kernel, layer));
    if (made) return made;
  }
  return fail(ErrorCode::op_not_found,
              kernel.description + ": kernelhub has no native adapter for layers." +
                  std::string(layer) +
                  " (docs/layers.md lists them); a Python-only build of the kernel runs its "
                  "layer through the embedded Python");
}

}  // namespace kernelhub::layers::detail
