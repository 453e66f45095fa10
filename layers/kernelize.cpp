// kernelize: each layer module bound to the kernel the mapping selects for it, or left to
// its own forward, with kernels' kernelize_layer decisions in kernels' order.
#include "kernelhub/kernelize.hpp"

#include <charconv>

#include <nlohmann/json.hpp>

#include "kernelhub/layers/layer_kernel.hpp"
#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/provider/process_environment.hpp"
#include "kernelhub/trust/layer_mapping.hpp"
#include "layer_loading.hpp"

namespace kernelhub::layers {
namespace {

struct Target {
  Mode mode;
  std::string device;
  std::optional<int> capability;
  Fallback fallback;
  bool disabled;  // DISABLE_KERNEL_MAPPING
};

// kernels reads DISABLE_KERNEL_MAPPING as bool(int(value)).
bool mapping_disabled() {
  const auto value = provider::process_environment().get("DISABLE_KERNEL_MAPPING");
  if (!value || value->empty()) return false;
  long long number = 0;
  const auto* end = value->data() + value->size();
  const auto [ptr, ec] = std::from_chars(value->data(), end, number);
  if (ec != std::errc() || ptr != end) {
    throw MappingError("DISABLE_KERNEL_MAPPING=" + *value + " is not an integer: set it to 1 or 0");
  }
  return number != 0;
}

std::string device_of(const torch::nn::Module& model) {
  const auto parameters = model.parameters();
  if (parameters.empty()) {
    throw MappingError(
        "Cannot determine the model's device (it has no parameters): give "
        "KernelizeOptions::device");
  }
  return c10::DeviceTypeName(parameters.front().device().type(), /*lower_case=*/true);
}

Target target_of(const torch::nn::Module& model, const KernelizeOptions& options) {
  if (options.mode == Mode::fallback) {
    throw MappingError("Mode::fallback can only be used to register kernel mappings");
  }
  if (!has_mode(options.mode, Mode::inference) && !has_mode(options.mode, Mode::training)) {
    throw MappingError("kernelize mode must contain Mode::inference or Mode::training");
  }
  if (auto valid = trust::check_layer_mode(options.mode); !valid) {
    throw MappingError("kernelize mode " + to_string(options.mode) + ": " + valid.error().message);
  }
  Target target{options.mode, options.device.value_or(""), options.capability, options.fallback,
                mapping_disabled()};
  if (target.device.empty()) target.device = device_of(model);
  if (!trust::is_layer_device_type(target.device)) {
    throw MappingError("Unsupported device type '" + target.device +
                       "'. Supported device types are: cpu, cuda, mps, neuron, npu, rocm, tpu, "
                       "xpu");
  }
  if (trust::has_capability(target.device) && !target.capability) {
    if (const auto capability = loader::cuda_compute_capability()) {
      target.capability = capability->first * 10 + capability->second;
    }
  }
  return target;
}

Fallback fallback_case(Selection::Outcome outcome) {
  switch (outcome) {
    case Selection::Outcome::no_layer:
      return Fallback::no_layer;
    case Selection::Outcome::no_device:
      return Fallback::no_device;
    case Selection::Outcome::no_compatible_properties:
      return Fallback::no_compatible_properties;
    default:
      return Fallback::no_compatible_mode;
  }
}

std::string no_mapping_message(const LayerBinding& binding, Selection::Outcome outcome,
                               const Target& target) {
  const std::string& name = binding.layer_name;
  switch (outcome) {
    case Selection::Outcome::no_layer:
      return "No layer mapping for `" + name + "`";
    case Selection::Outcome::no_device:
      return "No layer mapping for `" + name + "` with device type `" + target.device + "`";
    case Selection::Outcome::no_compatible_properties:
      return "No layer mapping for `" + name + "` device `" + target.device +
             "` with the right properties (capability " +
             (target.capability ? std::to_string(*target.capability) : std::string("unknown")) +
             ")";
    default:
      return "No repository for `" + name + "` for configuration mode=" + to_string(target.mode);
  }
}

void keep_own_forward(KernelizableLayer& layer, LayerBinding& binding, std::string reason) {
  layer.set_kernel(nullptr);
  binding.fallback_reason = std::move(reason);
}

LayerBinding kernelize_layer(KernelizableLayer& layer, std::string path,
                             const KernelMapping& mapping, const Target& target) {
  LayerBinding binding{.module = std::move(path), .layer_name = layer.kernel_layer_name()};
  if (target.disabled) {
    keep_own_forward(layer, binding, "disabled");
    return binding;
  }
  const Selection selection =
      mapping.select(binding.layer_name, target.device, target.capability, target.mode);
  if (selection.outcome != Selection::Outcome::found) {
    if (!allows(target.fallback, fallback_case(selection.outcome))) {
      throw MappingError(no_mapping_message(binding, selection.outcome, target));
    }
    keep_own_forward(layer, binding, std::string(to_string(selection.outcome)));
    return binding;
  }
  binding.repository = selection.repository;
  binding.repository_mode = selection.repository_mode;

  std::shared_ptr<const LayerKernel> kernel;
  try {
    kernel = detail::load_layer(*selection.repository);
  } catch (const LayerUnavailable&) {
    if (!allows(target.fallback, Fallback::cannot_load)) throw;
    keep_own_forward(layer, binding, "cannot_load");
    return binding;
  }
  // kernels' _validate_layer: the forward must fit the module's.
  if (kernel->signature() != layer.signature()) {
    throw LayerRefused("Forward signature of " + kernel->describe() + " does not match layer `" +
                       binding.layer_name + "` (module " + binding.module + ")");
  }
  if (auto fits = kernel->check_module(layer); !fits) throw LayerRefused(fits.error().message);
  // kernels' _validate_layer_has_mode: a repository registered for a mode must support it.
  const Mode registered = selection.repository_mode;
  if (has_mode(registered, Mode::training) && !kernel->has_backward()) {
    throw LayerRefused(kernel->describe() + " does not support backward. Was registered for `" +
                       binding.layer_name + "` with mode `" + to_string(registered) + "`");
  }
  if (has_mode(registered, Mode::torch_compile) && !kernel->can_torch_compile()) {
    throw LayerRefused(kernel->describe() +
                       " does not support torch.compile. Was registered for `" +
                       binding.layer_name + "` with mode `" + to_string(registered) + "`");
  }
  // kernels' _conditionally_replace_forward: a fallback registration may still not fit.
  const bool lacks_compile =
      has_mode(target.mode, Mode::torch_compile) && !kernel->can_torch_compile();
  const bool lacks_backward = has_mode(target.mode, Mode::training) && !kernel->has_backward();
  if (lacks_compile || lacks_backward) {
    if (!allows(target.fallback, Fallback::no_compatible_mode)) {
      throw MappingError("Available kernel " + kernel->describe() +
                         " does not support mode: " + to_string(target.mode));
    }
    keep_own_forward(layer, binding, "mode_unsupported");
    return binding;
  }
  layer.set_kernel(kernel);
  binding.bound = true;
  binding.kernel = kernel->describe();
  return binding;
}

}  // namespace

std::size_t KernelizeReport::bound_count() const {
  std::size_t count = 0;
  for (const auto& layer : layers) count += layer.bound ? 1 : 0;
  return count;
}

std::string KernelizeReport::to_json() const {
  nlohmann::ordered_json out = {{"layers", nlohmann::ordered_json::array()}};
  for (const auto& layer : layers) {
    nlohmann::ordered_json entry = {{"module", layer.module},
                                    {"layer_name", layer.layer_name},
                                    {"bound", layer.bound},
                                    {"fallback_reason", layer.fallback_reason}};
    entry["repository"] = layer.repository ? nlohmann::ordered_json(layer.repository->describe())
                                           : nlohmann::ordered_json(nullptr);
    entry["mode"] = layer.repository ? to_string(layer.repository_mode) : std::string();
    entry["kernel"] = layer.kernel;
    out["layers"].push_back(std::move(entry));
  }
  return out.dump();
}

KernelizeReport kernelize(torch::nn::Module& model, const KernelMapping& mapping,
                          const KernelizeOptions& options) {
  const Target target = target_of(model, options);
  KernelizeReport report;
  if (auto* layer = dynamic_cast<KernelizableLayer*>(&model)) {
    report.layers.push_back(kernelize_layer(*layer, "", mapping, target));
  }
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    if (auto* layer = dynamic_cast<KernelizableLayer*>(item.value().get())) {
      report.layers.push_back(kernelize_layer(*layer, item.key(), mapping, target));
    }
  }
  return report;
}

}  // namespace kernelhub::layers
