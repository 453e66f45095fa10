// The mapping from layer names to kernels, and the choice for one module, as `kernels`'
// register_kernel_mapping and kernelize_layer make them.
#include <algorithm>
#include <array>

#include "kernelhub/kernelize.hpp"
#include "kernelhub/trust/layer_mapping.hpp"
#include "kernelhub/trust/revision.hpp"

namespace kernelhub::layers {
namespace {

// kernels' _MODE_FALLBACK_PRIORITY: the modes tried, in order, for a requested mode.
std::vector<Mode> mode_chain(Mode mode) {
  using enum trust::LayerMode;
  if (mode == inference) {
    return {inference, inference | torch_compile, training, training | torch_compile, fallback};
  }
  if (mode == training) return {training, training | torch_compile, fallback};
  if (mode == (inference | torch_compile)) {
    return {inference | torch_compile, training | torch_compile, fallback};
  }
  if (mode == (training | torch_compile)) return {training | torch_compile, fallback};
  throw MappingError("unsupported kernelize mode " + to_string(mode) +
                     ": use inference or training, optionally with torch_compile");
}

std::string repo_or_throw(std::string_view repo) {
  auto parsed = trust::RepoId::parse(repo);
  if (!parsed) throw MappingError("layer repository: " + parsed.error().message);
  return parsed->str();
}

LayerRepository from_source(const trust::LayerSource& source) {
  LayerRepository out;
  out.kind = static_cast<LayerRepository::Kind>(source.kind);
  if (source.repo) out.repo = source.repo->str();
  out.version = source.version;
  out.revision = source.revision;
  out.lockfile = source.lockfile;
  out.path = source.path;
  out.layer = source.layer;
  return out;
}

void check_device(const Device& device) {
  if (!trust::is_layer_device_type(device.type)) {
    throw MappingError("unsupported device type '" + device.type +
                       "': use one of cpu, cuda, mps, neuron, npu, rocm, tpu, xpu");
  }
  if (device.capability && !trust::has_capability(device.type)) {
    throw MappingError("a capability interval applies to cuda and rocm only, not " + device.type);
  }
  if (device.capability && device.capability->min > device.capability->max) {
    throw MappingError("capability interval [" + std::to_string(device.capability->min) + ", " +
                       std::to_string(device.capability->max) + "] has min above max");
  }
}

void check_mode(Mode mode) {
  if (auto valid = trust::check_layer_mode(mode); !valid) {
    throw MappingError("a mapping cannot register mode " + to_string(mode) + ": " +
                       valid.error().message);
  }
}

}  // namespace

std::string LayerRepository::describe() const {
  switch (kind) {
    case Kind::hub:
      return repo + (version ? " version " + std::to_string(*version) : " revision " + *revision) +
             ", layer " + layer;
    case Kind::locked:
      return repo + " locked by " + (lockfile ? lockfile->string() : "the lockfile in force") +
             ", layer " + layer;
    case Kind::local:
      return "local build " + path.string() + ", layer " + layer;
  }
  return layer;
}

std::string_view to_string(Selection::Outcome outcome) {
  switch (outcome) {
    case Selection::Outcome::found:
      return "found";
    case Selection::Outcome::no_layer:
      return "no_layer";
    case Selection::Outcome::no_device:
      return "no_device";
    case Selection::Outcome::no_compatible_properties:
      return "no_compatible_properties";
    case Selection::Outcome::no_compatible_mode:
      return "no_compatible_mode";
  }
  return "unknown";
}

LayerRepository hub_layer(std::string_view repo, std::string_view layer, std::uint64_t version) {
  LayerRepository out;
  out.repo = repo_or_throw(repo);
  out.version = version;
  out.layer = std::string(layer);
  return out;
}

LayerRepository hub_layer_at(std::string_view repo, std::string_view layer,
                             std::string_view revision) {
  auto valid = trust::validate_revision(revision);
  if (!valid)
    throw MappingError("layer repository " + std::string(repo) + ": " + valid.error().message);
  LayerRepository out;
  out.repo = repo_or_throw(repo);
  out.revision = *valid;
  out.layer = std::string(layer);
  return out;
}

LayerRepository locked_layer(std::string_view repo, std::string_view layer,
                             std::optional<std::filesystem::path> lockfile) {
  LayerRepository out;
  out.kind = LayerRepository::Kind::locked;
  out.repo = repo_or_throw(repo);
  out.lockfile = std::move(lockfile);
  out.layer = std::string(layer);
  return out;
}

LayerRepository local_layer(const std::filesystem::path& path, std::string_view layer) {
  LayerRepository out;
  out.kind = LayerRepository::Kind::local;
  out.path = path;
  out.layer = std::string(layer);
  return out;
}

KernelMapping& KernelMapping::add(std::string_view layer_name, const Device& device,
                                  const LayerRepository& repository) {
  return add(layer_name, device, ModeRepositories{{Mode::fallback, repository}});
}

KernelMapping& KernelMapping::add(std::string_view layer_name, const Device& device,
                                  ModeRepositories repositories) {
  check_device(device);
  for (const auto& [mode, repository] : repositories) check_mode(mode);
  auto layer = std::find_if(layers_.begin(), layers_.end(),
                            [&](const LayerSlots& l) { return l.name == layer_name; });
  if (layer == layers_.end()) layer = layers_.insert(layers_.end(), {std::string(layer_name), {}});
  auto slots = std::find_if(layer->devices.begin(), layer->devices.end(),
                            [&](const DeviceSlots& d) { return d.type == device.type; });
  if (slots == layer->devices.end()) {
    slots = layer->devices.insert(layer->devices.end(), {device.type, {}});
  }
  // Devices without capabilities hold one set of repositories; cuda and rocm one per
  // interval (no interval: the whole line).
  const CapabilityRange range = device.capability.value_or(CapabilityRange{});
  auto slot = std::find_if(slots->slots.begin(), slots->slots.end(), [&](const Slot& s) {
    return !trust::has_capability(device.type) || s.range == range;
  });
  if (slot == slots->slots.end()) {
    slots->slots.push_back({range, std::move(repositories)});
  } else {
    slot->range = range;
    slot->repositories = std::move(repositories);
  }
  return *this;
}

KernelMapping& KernelMapping::merge(const KernelMapping& other) {
  for (const auto& layer : other.layers_) {
    for (const auto& device : layer.devices) {
      for (const auto& slot : device.slots) {
        Device key{device.type, std::nullopt};
        if (trust::has_capability(device.type)) key.capability = slot.range;
        add(layer.name, key, slot.repositories);
      }
    }
  }
  return *this;
}

KernelMapping KernelMapping::from_file(const std::filesystem::path& path) {
  auto document = trust::read_layer_mapping(path);
  if (!document) throw MappingError(document.error().message);
  // Entries for the same layer, device and interval form one set of repositories by mode,
  // as one {Mode: repo} dict does in Python.
  KernelMapping mapping;
  const auto& entries = document->entries;
  std::vector<bool> taken(entries.size(), false);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (taken[i]) continue;
    const auto& first = entries[i];
    ModeRepositories repositories;
    for (std::size_t j = i; j < entries.size(); ++j) {
      const auto& entry = entries[j];
      if (entry.name == first.name && entry.device == first.device &&
          entry.capability == first.capability) {
        repositories.emplace_back(entry.mode, from_source(entry.source));
        taken[j] = true;
      }
    }
    mapping.add(first.name, {first.device, first.capability}, std::move(repositories));
  }
  return mapping;
}

Selection KernelMapping::select(std::string_view layer_name, std::string_view device_type,
                                std::optional<int> capability, Mode mode) const {
  const auto chain = mode_chain(mode);
  Selection selection;
  const auto layer = std::find_if(layers_.begin(), layers_.end(),
                                  [&](const LayerSlots& l) { return l.name == layer_name; });
  if (layer == layers_.end()) return selection;
  const auto device = std::find_if(layer->devices.begin(), layer->devices.end(),
                                   [&](const DeviceSlots& d) { return d.type == device_type; });
  selection.outcome = Selection::Outcome::no_device;
  if (device == layer->devices.end()) return selection;

  // The smallest interval that holds the capability; on a tie, the one added first. An
  // unknown capability matches only intervals that cover every capability.
  const Slot* best = nullptr;
  for (const auto& slot : device->slots) {
    const bool holds =
        !trust::has_capability(device->type) ||
        (capability ? slot.range.contains(*capability) : slot.range == CapabilityRange{});
    if (holds && (best == nullptr || slot.range.width() < best->range.width())) best = &slot;
  }
  selection.outcome = Selection::Outcome::no_compatible_properties;
  if (best == nullptr) return selection;

  selection.outcome = Selection::Outcome::no_compatible_mode;
  for (const Mode wanted : chain) {
    for (const auto& [registered, repository] : best->repositories) {
      if (registered == wanted) {
        selection.outcome = Selection::Outcome::found;
        selection.repository = repository;
        selection.repository_mode = registered;
        return selection;
      }
    }
  }
  return selection;
}

std::vector<LayerRepository> KernelMapping::repositories() const {
  std::vector<LayerRepository> out;
  for (const auto& layer : layers_) {
    for (const auto& device : layer.devices) {
      for (const auto& slot : device.slots) {
        for (const auto& [mode, repository] : slot.repositories) {
          if (std::find(out.begin(), out.end(), repository) == out.end()) {
            out.push_back(repository);
          }
        }
      }
    }
  }
  return out;
}

}  // namespace kernelhub::layers
