// libFuzzer harness: the layer mapping file (TOML or JSON), which an app or `kernelhub
// prefetch --mapping` reads and another user may have written. The first byte picks the
// format. Properties: no crash; every error is invalid_argument; every parsed entry holds
// what the parser promises (a device type, a layer name, one source form).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernelhub/trust/layer_mapping.hpp"

using namespace kernelhub;

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto mapping = (data[0] & 1) != 0 ? trust::parse_layer_mapping_toml(text, "/base", "fuzz.toml")
                                    : trust::parse_layer_mapping_json(text, "/base", "fuzz.json");
  if (!mapping) {
    if (mapping.error().code != ErrorCode::invalid_argument) __builtin_trap();
    return 0;
  }
  for (const auto& entry : mapping->entries) {
    if (!trust::is_layer_device_type(entry.device) || entry.name.empty() ||
        entry.source.layer.empty()) {
      __builtin_trap();
    }
    const auto& source = entry.source;
    const bool hub = source.kind == trust::LayerSource::Kind::hub;
    if (hub && source.version.has_value() == source.revision.has_value()) __builtin_trap();
    if (source.kind != trust::LayerSource::Kind::local && !source.repo) __builtin_trap();
    if (entry.capability && entry.capability->min > entry.capability->max) __builtin_trap();
  }
  return 0;
}
