#include "python_layer.hpp"

#include <vector>

#include "kernelhub/kernelize.hpp"
#include "kernelhub/python/import_kernel.hpp"

namespace kernelhub::layers::detail {
namespace {

namespace kpy = kernelhub::python;

// The parameter kinds after self of each layer module's forward.
std::optional<LayerSignature> signature_of(const std::vector<std::string>& kinds) {
  const auto all_positional = [&] {
    for (const auto& kind : kinds) {
      if (kind != "POSITIONAL_OR_KEYWORD") return false;
    }
    return true;
  };
  if (kinds.size() == 1 && all_positional()) return LayerSignature::tensor;
  if (kinds.size() == 5 && all_positional()) return LayerSignature::rotary;
  return std::nullopt;
}

class PythonLayer final : public LayerKernel {
 public:
  PythonLayer(kpy::Kernel kernel, kpy::Kernel support, std::string layer, std::string description,
              LayerSignature signature, bool has_backward, bool can_torch_compile)
      : kernel_(std::move(kernel)),
        support_(std::move(support)),
        layer_(std::move(layer)),
        description_(std::move(description)),
        signature_(signature),
        has_backward_(has_backward),
        can_torch_compile_(can_torch_compile) {}

  LayerSignature signature() const override { return signature_; }
  bool has_backward() const override { return has_backward_; }
  bool can_torch_compile() const override { return can_torch_compile_; }
  const std::string& describe() const override { return description_; }
  // The class reads what it reads when it runs, as in Python: an attribute the module lacks
  // is an AttributeError of the call.
  Result<void> check_module(const KernelizableLayer& /*module*/) const override { return ok(); }

  at::Tensor forward(const KernelizableLayer& module, const at::Tensor& x) const override {
    auto args = arguments(module);
    args.emplace_back(x);
    const c10::IValue out = run(args);
    TORCH_CHECK(out.isTensor(), description_, " returned a ", out.tagKind(), ", not a tensor");
    return out.toTensor();
  }

  std::tuple<at::Tensor, at::Tensor> forward(const KernelizableLayer& module, const at::Tensor& q,
                                             const at::Tensor& k, const at::Tensor& cos,
                                             const at::Tensor& sin,
                                             int64_t unsqueeze_dim) const override {
    auto args = arguments(module);
    for (const auto& value : {q, k, cos, sin}) args.emplace_back(value);
    args.emplace_back(unsqueeze_dim);
    const c10::IValue out = run(args);
    TORCH_CHECK(out.isTuple() && out.toTupleRef().elements().size() == 2, description_,
                " returned a ", out.tagKind(), ", not (q, k)");
    const auto& pair = out.toTupleRef().elements();
    return {pair[0].toTensor(), pair[1].toTensor()};
  }

 private:
  // call_layer's leading arguments: the class, the training flag, the attributes.
  std::vector<c10::IValue> arguments(const KernelizableLayer& module) const {
    std::vector<c10::IValue> args{kernel_.module_name(), layer_, module.training_mode(),
                                  int64_t{0}};
    int64_t count = 0;
    for (const auto& name : module.attribute_names()) {
      if (auto tensor = module.tensor_attribute(name)) {
        args.emplace_back(std::string(name));
        args.emplace_back(*tensor);
      } else if (auto number = module.float_attribute(name)) {
        args.emplace_back(std::string(name));
        args.emplace_back(*number);
      } else {
        continue;
      }
      ++count;
    }
    args[3] = count;
    return args;
  }

  c10::IValue run(const std::vector<c10::IValue>& args) const {
    try {
      return support_.call("call_layer", args);
    } catch (const kpy::PythonError& error) {
      TORCH_CHECK(false, description_, " raised ", error.type(), ": ", error.python_message(), " (",
                  error.file(), ":", error.line(), ")");
    }
  }

  kpy::Kernel kernel_;
  kpy::Kernel support_;
  std::string layer_;
  std::string description_;
  LayerSignature signature_;
  bool has_backward_;
  bool can_torch_compile_;
};

}  // namespace

std::shared_ptr<const LayerKernel> load_python_layer(const provider::ProvidedKernel& kernel,
                                                     std::string_view layer,
                                                     const std::string& description) {
  try {
    kpy::Kernel imported = kpy::import_kernel(kernel.source, kernel.variant_dir);
    kpy::Kernel support = kpy::import_installed("_kernelhub_importer");
    const c10::IValue info =
        support.call("layer_info", {imported.module_name(), std::string(layer)});
    const auto& fields = info.toTupleRef().elements();
    std::vector<std::string> kinds;
    for (const auto& kind : fields.at(2).toListRef()) kinds.push_back(kind.toStringRef());
    const auto signature = signature_of(kinds);
    if (!signature) {
      throw LayerRefused(description + ": its forward takes " + std::to_string(kinds.size()) +
                         " arguments after self; kernelhub's layer modules take (x) or (q, k, "
                         "cos, sin, unsqueeze_dim)");
    }
    return std::make_shared<PythonLayer>(std::move(imported), std::move(support),
                                         std::string(layer), description, *signature,
                                         fields.at(0).toBool(), fields.at(1).toBool());
  } catch (const kpy::KernelRefused& error) {
    throw LayerRefused(error.what());
  } catch (const kpy::BackendUnavailable& error) {
    throw LayerUnavailable(error.what());
  } catch (const kpy::PythonError& error) {
    // kernels raises these (no layers, no such class, a class that breaks its rules): never
    // a silent fall-back.
    throw LayerRefused(description + ": " + error.type() + ": " + error.python_message());
  }
}

}  // namespace kernelhub::layers::detail
