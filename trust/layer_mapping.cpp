#include "kernelhub/trust/layer_mapping.hpp"

#include <algorithm>
#include <array>
#include <sstream>

#include <toml++/toml.h>

#include "kernelhub/trust/revision.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/read_file.hpp"
#include "kernelhub/util/toml_bounds.hpp"

namespace kernelhub::trust {
namespace {

constexpr util::JsonBounds kMappingJson{kMaxLayerMappingBytes, 16, 100'000};
constexpr util::TomlBounds kMappingToml{kMaxLayerMappingBytes, 65'536};
constexpr std::size_t kMaxName = 128;
constexpr int kMaxCapability = 10'000;

constexpr std::array<std::string_view, 8> kDeviceTypes = {"cpu", "cuda", "mps", "neuron",
                                                          "npu", "rocm", "tpu", "xpu"};
constexpr std::array<std::string_view, 11> kEntryKeys = {
    "name",    "device",   "capability", "mode",   "repo", "layer",
    "version", "revision", "lockfile",   "locked", "path"};

Unexpected invalid(std::string_view where, const std::string& why) {
  return fail(ErrorCode::invalid_argument, std::string(where) + ": " + why);
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == ':';
}

// A layer name as models carry it ("RMSNorm", "rotary_pos_emb", "MegaBlocksMoeMLP").
bool is_layer_name(std::string_view text) {
  return !text.empty() && text.size() <= kMaxName &&
         std::all_of(text.begin(), text.end(), is_name_char);
}

// A Python attribute name: the class in the kernel's `layers` module.
bool is_python_identifier(std::string_view text) {
  if (text.empty() || text.size() > kMaxName || (text[0] >= '0' && text[0] <= '9')) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

Result<std::string> string_member(const nlohmann::json& entry, const char* key,
                                  const std::string& where) {
  const auto& value = entry.at(key);
  if (!value.is_string()) return invalid(where, std::string("`") + key + "` must be a string");
  return value.get<std::string>();
}

Result<CapabilityRange> parse_capability(const nlohmann::json& value, const std::string& where) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() ||
      !value[1].is_number_integer()) {
    return invalid(where,
                   "`capability` must be [min, max], two integers of major*10+minor "
                   "(e.g. [80, 90] for 8.0 to 9.0)");
  }
  const auto min = value[0].get<std::int64_t>();
  const auto max = value[1].get<std::int64_t>();
  if (min < 0 || max > kMaxCapability || min > max) {
    return invalid(where,
                   "`capability` [" + std::to_string(min) + ", " + std::to_string(max) +
                       "] must satisfy 0 <= min <= max <= " + std::to_string(kMaxCapability));
  }
  return CapabilityRange{static_cast<int>(min), static_cast<int>(max)};
}

std::filesystem::path resolve(const std::filesystem::path& base_dir, const std::string& value) {
  const std::filesystem::path path(value);
  return path.is_absolute() || base_dir.empty() ? path : base_dir / path;
}

Result<LayerSource> parse_source(const nlohmann::json& entry, const std::filesystem::path& base_dir,
                                 const std::string& where) {
  LayerSource source;
  KH_TRY_ASSIGN(source.layer, string_member(entry, "layer", where));
  if (!is_python_identifier(source.layer)) {
    return invalid(where,
                   "`layer` must name a class of the kernel's `layers` module (a Python "
                   "identifier), not '" +
                       source.layer + "'");
  }
  const bool has_version = entry.contains("version");
  const bool has_revision = entry.contains("revision");
  const bool has_lockfile = entry.contains("lockfile");
  const bool has_locked = entry.contains("locked");
  const bool has_path = entry.contains("path");
  const int forms =
      int(has_version) + int(has_revision) + int(has_lockfile) + int(has_locked) + int(has_path);
  if (forms != 1) {
    return invalid(where,
                   "give exactly one of `version`, `revision`, `lockfile`, `locked = "
                   "true` (the lockfile in force) or `path` (a local build)");
  }
  if (has_path) {
    if (entry.contains("repo")) return invalid(where, "a local `path` takes no `repo`");
    source.kind = LayerSource::Kind::local;
    KH_TRY_ASSIGN(auto path, string_member(entry, "path", where));
    if (path.empty()) return invalid(where, "`path` is empty");
    source.path = resolve(base_dir, path);
    return source;
  }
  if (!entry.contains("repo")) return invalid(where, "`repo` (org/name) is missing");
  KH_TRY_ASSIGN(auto repo_text, string_member(entry, "repo", where));
  auto repo = RepoId::parse(repo_text);
  if (!repo) return invalid(where, "`repo`: " + repo.error().message);
  source.repo = *repo;
  if (has_version) {
    const auto& version = entry.at("version");
    if (!version.is_number_unsigned()) {
      return invalid(where, "`version` must be a non-negative integer (branch v<N>)");
    }
    source.version = version.get<std::uint64_t>();
  } else if (has_revision) {
    KH_TRY_ASSIGN(auto revision, string_member(entry, "revision", where));
    auto valid = validate_revision(revision);
    if (!valid) return invalid(where, "`revision`: " + valid.error().message);
    source.revision = *valid;
  } else if (has_lockfile) {
    source.kind = LayerSource::Kind::locked;
    KH_TRY_ASSIGN(auto lockfile, string_member(entry, "lockfile", where));
    if (lockfile.empty()) return invalid(where, "`lockfile` is empty");
    source.lockfile = resolve(base_dir, lockfile);
  } else {
    if (entry.at("locked") != true) {
      return invalid(where, "`locked` may only be true (the lockfile in force)");
    }
    source.kind = LayerSource::Kind::locked;
  }
  return source;
}

Result<LayerMappingEntry> parse_entry(const nlohmann::json& entry,
                                      const std::filesystem::path& base_dir,
                                      const std::string& where) {
  if (!entry.is_object()) return invalid(where, "must be a table");
  for (const auto& [key, value] : entry.items()) {
    if (std::find(kEntryKeys.begin(), kEntryKeys.end(), key) == kEntryKeys.end()) {
      return invalid(where, "unknown key `" + key + "`");
    }
  }
  LayerMappingEntry out;
  if (!entry.contains("name")) return invalid(where, "`name` (the layer name) is missing");
  KH_TRY_ASSIGN(out.name, string_member(entry, "name", where));
  if (!is_layer_name(out.name)) {
    return invalid(where, "`name` must be 1 to 128 of A-Z a-z 0-9 _ - . :");
  }
  const std::string named = where + " (" + out.name + ")";
  if (!entry.contains("device")) return invalid(named, "`device` is missing");
  KH_TRY_ASSIGN(out.device, string_member(entry, "device", named));
  if (!is_layer_device_type(out.device)) {
    return invalid(named, "unsupported device type '" + out.device +
                              "': use one of cpu, cuda, mps, neuron, npu, rocm, tpu, xpu");
  }
  if (entry.contains("capability")) {
    if (!has_capability(out.device)) {
      return invalid(named, "`capability` applies to cuda and rocm only, not " + out.device);
    }
    KH_TRY_ASSIGN(out.capability, parse_capability(entry.at("capability"), named));
  }
  if (entry.contains("mode")) {
    KH_TRY_ASSIGN(auto mode, string_member(entry, "mode", named));
    auto parsed = parse_layer_mode(mode);
    if (!parsed) return invalid(named, parsed.error().message);
    out.mode = *parsed;
  }
  if (!entry.contains("layer")) return invalid(named, "`layer` (the class in the repo) is missing");
  KH_TRY_ASSIGN(out.source, parse_source(entry, base_dir, named));
  return out;
}

bool same_slot(const LayerMappingEntry& a, const LayerMappingEntry& b) {
  return a.name == b.name && a.device == b.device && a.capability == b.capability &&
         a.mode == b.mode;
}

Result<LayerMapping> parse_document(const nlohmann::json& root,
                                    const std::filesystem::path& base_dir, std::string_view where) {
  if (!root.is_object()) return invalid(where, "a layer mapping is a table with `layers`");
  for (const auto& [key, value] : root.items()) {
    if (key != "layers") return invalid(where, "unknown key `" + key + "` (only `layers`)");
  }
  LayerMapping mapping;
  if (!root.contains("layers")) return mapping;
  const auto& layers = root.at("layers");
  if (!layers.is_array()) return invalid(where, "`layers` must be an array of tables");
  if (layers.size() > kMaxLayerMappingEntries) {
    return invalid(where, "more than " + std::to_string(kMaxLayerMappingEntries) + " entries");
  }
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string entry_where = std::string(where) + ": layers entry " + std::to_string(i + 1);
    KH_TRY_ASSIGN(auto entry, parse_entry(layers[i], base_dir, entry_where));
    for (const auto& earlier : mapping.entries) {
      if (same_slot(earlier, entry)) {
        return invalid(entry_where, "maps " + entry.name + " on " + entry.device + " in mode " +
                                        to_string(entry.mode) + " a second time");
      }
    }
    mapping.entries.push_back(std::move(entry));
  }
  return mapping;
}

}  // namespace

std::string to_string(LayerMode mode) {
  std::string out;
  const auto add = [&out](const char* name) {
    if (!out.empty()) out += '+';
    out += name;
  };
  if (has_mode(mode, LayerMode::fallback)) add("fallback");
  if (has_mode(mode, LayerMode::inference)) add("inference");
  if (has_mode(mode, LayerMode::training)) add("training");
  if (has_mode(mode, LayerMode::torch_compile)) add("torch_compile");
  return out.empty() ? "none" : out;
}

Result<LayerMode> parse_layer_mode(std::string_view text) {
  unsigned bits = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find('+', start), text.size());
    const std::string_view word = text.substr(start, end - start);
    if (word == "fallback") {
      bits |= static_cast<unsigned>(LayerMode::fallback);
    } else if (word == "inference") {
      bits |= static_cast<unsigned>(LayerMode::inference);
    } else if (word == "training") {
      bits |= static_cast<unsigned>(LayerMode::training);
    } else if (word == "torch_compile") {
      bits |= static_cast<unsigned>(LayerMode::torch_compile);
    } else {
      return fail(ErrorCode::invalid_argument,
                  "unknown mode '" + std::string(word) +
                      "': use fallback, inference, training, inference+torch_compile or "
                      "training+torch_compile");
    }
    start = end + 1;
  }
  const auto mode = static_cast<LayerMode>(bits);
  KH_TRY(check_layer_mode(mode));
  return mode;
}

Result<void> check_layer_mode(LayerMode mode) {
  const auto bits = static_cast<unsigned>(mode);
  if (bits == 0 || bits > 15) {
    return fail(ErrorCode::invalid_argument, "not a mode (flags " + std::to_string(bits) + ")");
  }
  if (has_mode(mode, LayerMode::inference) && has_mode(mode, LayerMode::training)) {
    return fail(ErrorCode::invalid_argument, "modes inference and training exclude each other");
  }
  if (has_mode(mode, LayerMode::fallback) && mode != LayerMode::fallback) {
    return fail(ErrorCode::invalid_argument, "mode fallback cannot be combined with another");
  }
  if (mode == LayerMode::torch_compile) {
    return fail(ErrorCode::invalid_argument,
                "torch_compile needs inference or training (e.g. inference+torch_compile)");
  }
  return ok();
}

bool is_layer_device_type(std::string_view type) {
  return std::find(kDeviceTypes.begin(), kDeviceTypes.end(), type) != kDeviceTypes.end();
}

bool has_capability(std::string_view type) { return type == "cuda" || type == "rocm"; }

MappedKernels mapped_kernels(const LayerMapping& mapping) {
  MappedKernels out;
  for (const auto& entry : mapping.entries) {
    const auto& source = entry.source;
    switch (source.kind) {
      case LayerSource::Kind::hub: {
        KernelDependency dependency{*source.repo, std::uint64_t{0}};
        if (source.version) {
          dependency.pin = *source.version;
        } else {
          dependency.pin = *source.revision;
        }
        if (std::find(out.hub.begin(), out.hub.end(), dependency) == out.hub.end()) {
          out.hub.push_back(std::move(dependency));
        }
        break;
      }
      case LayerSource::Kind::locked: {
        std::pair<RepoId, std::optional<std::filesystem::path>> locked{*source.repo,
                                                                       source.lockfile};
        if (std::find(out.locked.begin(), out.locked.end(), locked) == out.locked.end()) {
          out.locked.push_back(std::move(locked));
        }
        break;
      }
      case LayerSource::Kind::local:
        ++out.local;
        break;
    }
  }
  return out;
}

Result<LayerMapping> parse_layer_mapping_json(std::string_view text,
                                              const std::filesystem::path& base_dir,
                                              std::string_view where) {
  auto root = util::parse_bounded_json(text, kMappingJson, ErrorCode::invalid_argument);
  if (!root) return invalid(where, root.error().message);
  return parse_document(*root, base_dir, where);
}

Result<LayerMapping> parse_layer_mapping_toml(std::string_view text,
                                              const std::filesystem::path& base_dir,
                                              std::string_view where) {
  if (auto bounded = util::check_toml_shape(text, kMappingToml, ErrorCode::invalid_argument);
      !bounded) {
    return invalid(where, bounded.error().message);
  }
  toml::table root;
  try {
    root = toml::parse(text, std::string(where));
  } catch (const toml::parse_error& e) {
    std::ostringstream message;
    message << "invalid TOML: " << e.description() << " (line " << e.source().begin.line << ")";
    return invalid(where, message.str());
  }
  // One shape checker for both formats: toml++ writes the table as JSON, which is then read
  // like a JSON mapping (dates and times come out as strings, which the checker refuses).
  std::ostringstream json;
  json << toml::json_formatter{root};
  return parse_layer_mapping_json(json.str(), base_dir, where);
}

Result<LayerMapping> read_layer_mapping(const std::filesystem::path& path) {
  const auto extension = path.extension();
  if (extension != ".toml" && extension != ".json") {
    return invalid(path.string(), "a layer mapping file ends in .toml or .json");
  }
  KH_TRY_ASSIGN(auto text, util::read_small_file(path, kMaxLayerMappingBytes));
  const auto base_dir = path.parent_path();
  if (extension == ".toml") return parse_layer_mapping_toml(text, base_dir, path.string());
  return parse_layer_mapping_json(text, base_dir, path.string());
}

}  // namespace kernelhub::trust
