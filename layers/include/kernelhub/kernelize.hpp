// kernelize for libtorch models: binds each layer module (<kernelhub/layers.hpp>) to the Hub
// kernel a mapping names for its layer name, with the semantics of `kernels`' kernelize.
//
//   namespace kl = kernelhub::layers;
//   auto mapping = kl::KernelMapping::from_file("layers.toml");     // or built in code:
//   mapping.add("SiluAndMul", {"cpu"}, kl::hub_layer("kernels-community/activation", "SiluAndMul",
//   1)); kl::KernelizeReport report = kl::kernelize(*model, mapping, {.mode =
//   kl::Mode::inference});
//
// Per module: the mapping's entry for its layer name, then for the device type (given, or
// that of the model's first parameter), then for cuda/rocm the smallest capability interval
// that contains the device's, then the first mode of kernels' fallback chain the entry has
// (inference: inference, inference+torch_compile, training, training+torch_compile, fallback).
// What is not found falls back to the module's own forward as `fallback` allows (kernels'
// KernelizeFallback), else MappingError. The kernel is fetched and verified like every hub
// kernel (kernelhubd or the embedded cache; the trust rule, the lockfile in force,
// signatures), loaded once per process and checked against the module: a native kernel's op
// schemas, a Python layer class's shape. DISABLE_KERNEL_MAPPING=1 keeps every module's own
// forward.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

#include "kernelhub/layers.hpp"
#include "kernelhub/trust/layer_mode.hpp"

namespace kernelhub::layers {

class KernelizeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The mapping cannot serve: no entry for a layer, device, capability or mode while `fallback`
// does not allow keeping the module's forward; a bad mapping file or option.
class MappingError : public KernelizeError {
 public:
  using KernelizeError::KernelizeError;
};
// Refused by a rule or a check, never a silent fall-back: the trust rule, verification, a
// lockfile, an op whose schema is not the one the adapter calls, a layer that does not fit
// the module, a kernel mapped for training that has no backward.
class LayerRefused : public KernelizeError {
 public:
  using KernelizeError::KernelizeError;
};
// The kernel could not be fetched or loaded (network, no build for this process, no Python).
class LayerUnavailable : public KernelizeError {
 public:
  using KernelizeError::KernelizeError;
};

using Mode = trust::LayerMode;  // kernels' Mode flags: Mode::inference | Mode::torch_compile
using CapabilityRange = trust::CapabilityRange;
using trust::has_mode;
using trust::to_string;  // "inference+torch_compile"

// A device type with, for cuda and rocm, the capability interval a kernel is for (kernels'
// Device with CUDAProperties / ROCMProperties).
struct Device {
  std::string type;
  std::optional<CapabilityRange> capability = std::nullopt;
};

// kernels' LayerRepository (a hub repo at a version or revision), LockedLayerRepository (at
// the commit a lockfile pins) and LocalLayerRepository (a build on disk), with the class
// of the kernel's `layers` module that stands in for the layer. Made by the functions below,
// which check what they are given (MappingError).
struct LayerRepository {
  enum class Kind { hub, locked, local };
  Kind kind = Kind::hub;
  std::string repo;                               // hub, locked: "org/name"
  std::optional<std::uint64_t> version;           // hub: exactly one of version and revision
  std::optional<std::string> revision;            // hub
  std::optional<std::filesystem::path> lockfile;  // locked; nullopt: the lockfile in force
  std::filesystem::path path;                     // local
  std::string layer;

  // "kernels-community/activation version 1, layer SiluAndMul", for messages and reports.
  std::string describe() const;
  bool operator==(const LayerRepository&) const = default;
};
LayerRepository hub_layer(std::string_view repo, std::string_view layer, std::uint64_t version);
LayerRepository hub_layer_at(std::string_view repo, std::string_view layer,
                             std::string_view revision);
// The commit `lockfile` pins; without one, the lockfile in force (KERNELHUB_LOCKFILE or
// set_kernel_lockfile).
LayerRepository locked_layer(std::string_view repo, std::string_view layer,
                             std::optional<std::filesystem::path> lockfile = std::nullopt);
LayerRepository local_layer(const std::filesystem::path& path, std::string_view layer);

using ModeRepositories = std::vector<std::pair<Mode, LayerRepository>>;

// What the mapping holds for a layer on a device, for one module.
struct Selection {
  enum class Outcome { found, no_layer, no_device, no_compatible_properties, no_compatible_mode };
  Outcome outcome = Outcome::no_layer;
  std::optional<LayerRepository> repository;  // when found
  Mode repository_mode = Mode::fallback;      // the mode it was registered for
};
std::string_view to_string(Selection::Outcome outcome);

class KernelMapping {
 public:
  // register_kernel_mapping: `repositories` for (layer, device) replace what the mapping had
  // for that device type (cpu, mps, ...) or, on cuda/rocm, for that capability interval.
  KernelMapping& add(std::string_view layer_name, const Device& device,
                     const LayerRepository& repository);  // Mode::fallback
  KernelMapping& add(std::string_view layer_name, const Device& device,
                     ModeRepositories repositories);
  // Every entry of `other` added to this one (kernels' inherit_mapping=True).
  KernelMapping& merge(const KernelMapping& other);

  // A mapping file, TOML or JSON (docs/layers.md documents the format); MappingError names
  // the file and the entry.
  static KernelMapping from_file(const std::filesystem::path& path);
  // transformers' default mapping for the layers of <kernelhub/layers.hpp>, where the Hub
  // has native builds (docs/layers.md lists it).
  static KernelMapping builtin();

  Selection select(std::string_view layer_name, std::string_view device_type,
                   std::optional<int> capability, Mode mode) const;
  // Every repository the mapping names, once each, in the order added: what `kernelhub
  // prefetch --mapping` fetches.
  std::vector<LayerRepository> repositories() const;
  bool empty() const { return layers_.empty(); }

 private:
  struct Slot {
    CapabilityRange range;  // the whole line on devices without capabilities
    ModeRepositories repositories;
  };
  struct DeviceSlots {
    std::string type;
    std::vector<Slot> slots;
  };
  struct LayerSlots {
    std::string name;
    std::vector<DeviceSlots> devices;
  };
  std::vector<LayerSlots> layers_;
};

// kernels' KernelizeFallback: the cases in which a module keeps its own forward.
enum class Fallback : unsigned {
  none = 0,
  no_layer = 1,
  no_device = 2,
  no_compatible_properties = 4,
  no_compatible_mode = 8,
  cannot_load = 16,  // a kernel that cannot be fetched or loaded (never a refusal)
  default_cases = 1 | 2 | 4 | 8,
  all = 1 | 2 | 4 | 8 | 16,
};
constexpr Fallback operator|(Fallback a, Fallback b) {
  return static_cast<Fallback>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr bool allows(Fallback set, Fallback flag) {
  return (static_cast<unsigned>(set) & static_cast<unsigned>(flag)) != 0;
}

struct KernelizeOptions {
  Mode mode = Mode::inference;  // must hold inference or training, never fallback
  // cpu cuda mps neuron npu rocm tpu xpu; nullopt: the type of the model's first parameter.
  std::optional<std::string> device = std::nullopt;
  // major*10+minor for cuda/rocm; nullopt: asked from the CUDA runtime torch loaded.
  std::optional<int> capability = std::nullopt;
  Fallback fallback = Fallback::default_cases;
};

// What kernelize did to each layer module, in tree order.
struct LayerBinding {
  std::string module;      // path in the model ("" for the model itself, "layers.0.mlp.act")
  std::string layer_name;  // the module's layer name
  bool bound = false;      // a kernel's forward; false: the module's own
  // Why the module kept its own forward: a Selection outcome, "cannot_load",
  // "mode_unsupported" (the kernel lacks backward or torch.compile support for the mode)
  // or "disabled" (DISABLE_KERNEL_MAPPING); empty when bound.
  std::string fallback_reason = {};
  std::optional<LayerRepository> repository = std::nullopt;  // the one selected, when one was
  Mode repository_mode = Mode::fallback;
  std::string kernel = {};  // LayerKernel::describe() of the bound kernel
};
struct KernelizeReport {
  std::vector<LayerBinding> layers;
  std::size_t bound_count() const;
  // {"layers": [{"module", "layer_name", "bound", "fallback_reason", "repository", "mode",
  // "kernel"}]}, for logs and tools.
  std::string to_json() const;
};

// Binds every KernelizableLayer in `model` (itself included) as described above; modules
// that fall back are reset to their own forward. Throws MappingError, LayerRefused or
// LayerUnavailable; modules bound before a throw stay bound.
KernelizeReport kernelize(torch::nn::Module& model, const KernelMapping& mapping,
                          const KernelizeOptions& options = {});

}  // namespace kernelhub::layers
