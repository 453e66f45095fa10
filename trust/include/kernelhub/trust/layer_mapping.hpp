// A layer mapping file: which Hub kernel replaces a model's layer, per device, capability
// interval and mode, with the semantics of `kernels`' register_kernel_mapping. kernelize
// (libkernelhub's <kernelhub/layers.hpp>) binds by it, and `kernelhub lock`, `prefetch` and
// `pin` read it to pre-resolve every kernel a model will need. TOML or JSON, one shape:
//
//   [[layers]]
//   name = "RMSNorm"                   # the layer name a module carries
//   device = "cuda"                    # cpu cuda rocm mps xpu npu neuron tpu
//   capability = [80, 90]              # cuda/rocm only: min and max of major*10+minor
//   mode = "inference"                 # fallback (default) | inference | training,
//   "+torch_compile" repo = "kernels-community/layer-norm" layer = "LlamaRMSNorm"             # the
//   class in the repo's `layers` version = 1                        # or revision = "..." |
//   lockfile = "kernels.lock" | path = "/local/build"
//
// A file is someone's configuration and may be shared: it is bounded (size, depth, count)
// and every error names the entry and says what to change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernelhub/trust/kernel_dependency.hpp"
#include "kernelhub/trust/layer_mode.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

inline constexpr std::size_t kMaxLayerMappingBytes = 1u << 20;
inline constexpr std::size_t kMaxLayerMappingEntries = 4096;

// A mode as to_string writes it, with kernels' rules: inference and training exclude each
// other, fallback stands alone, torch_compile needs one of the two. invalid_argument
// otherwise.
Result<LayerMode> parse_layer_mode(std::string_view text);
// The same rules on a mode built in code: invalid_argument saying which it breaks.
Result<void> check_layer_mode(LayerMode mode);

// kernels' device types.
bool is_layer_device_type(std::string_view type);
// Whether the type selects by capability interval (cuda, rocm).
bool has_capability(std::string_view type);

// Where a layer comes from: kernels' LayerRepository (repo at a version or revision),
// LockedLayerRepository (repo at the commit a kernels.lock pins) or LocalLayerRepository (a
// build folder on disk).
struct LayerSource {
  enum class Kind { hub, locked, local };
  Kind kind = Kind::hub;
  std::optional<RepoId> repo;                     // hub, locked
  std::optional<std::uint64_t> version;           // hub: exactly one of version and revision
  std::optional<std::string> revision;            // hub
  std::optional<std::filesystem::path> lockfile;  // locked; nullopt: the lockfile in force
  std::filesystem::path path;                     // local
  std::string layer;                              // the class in the kernel's `layers`

  // "kernels-community/activation version 1, layer SiluAndMul", for messages and reports.
  std::string describe() const;
  bool operator==(const LayerSource&) const = default;
};

struct LayerMappingEntry {
  std::string name;                           // the model's layer name
  std::string device;                         // a device type
  std::optional<CapabilityRange> capability;  // cuda/rocm only
  LayerMode mode = LayerMode::fallback;
  LayerSource source;
};

struct LayerMapping {
  std::vector<LayerMappingEntry> entries;  // in file order
};

// What a mapping needs from the Hub, once per kernel, in file order: its hub entries as
// dependencies (a repo at a version or revision) and its locked entries (a repo and the
// lockfile that pins it; nullopt: the lockfile in force). Local builds need nothing.
// `kernelhub lock`, `prefetch` and `pin` take them with --mapping.
struct MappedKernels {
  std::vector<KernelDependency> hub;
  std::vector<std::pair<RepoId, std::optional<std::filesystem::path>>> locked;
  std::size_t local = 0;
};
MappedKernels mapped_kernels(const LayerMapping& mapping);

// Parses a mapping document. Relative `lockfile` and `path` values are taken relative to
// `base_dir` (the file's folder). `where` prefixes every message (the file's path).
Result<LayerMapping> parse_layer_mapping_json(std::string_view text,
                                              const std::filesystem::path& base_dir,
                                              std::string_view where);
Result<LayerMapping> parse_layer_mapping_toml(std::string_view text,
                                              const std::filesystem::path& base_dir,
                                              std::string_view where);
// Reads a mapping file: TOML for *.toml, JSON for *.json; invalid_argument for another name.
Result<LayerMapping> read_layer_mapping(const std::filesystem::path& path);

}  // namespace kernelhub::trust
