// kernels' Mode flags and a compute-capability interval: what a layer mapping keys kernels
// by besides the device type. Self-contained (no other header of the project), because
// libkernelhub's <kernelhub/kernelize.hpp> installs it with the app API.
#pragma once

#include <string>

namespace kernelhub::trust {

// Mode::inference | Mode::torch_compile. inference and training exclude each other; fallback
// stands alone and is only registered, never asked for.
enum class LayerMode : unsigned {
  fallback = 1,
  training = 2,
  inference = 4,
  torch_compile = 8,
};
constexpr LayerMode operator|(LayerMode a, LayerMode b) {
  return static_cast<LayerMode>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr bool has_mode(LayerMode set, LayerMode flag) {
  return (static_cast<unsigned>(set) & static_cast<unsigned>(flag)) != 0;
}

// "inference", "training+torch_compile", "fallback" (trust/layer_mapping.cpp).
std::string to_string(LayerMode mode);

// An inclusive interval of compute capabilities, major*10+minor; the whole line when a
// mapping gives none.
struct CapabilityRange {
  int min = 0;
  int max = 0x7fffffff;
  int width() const { return max - min; }
  bool contains(int capability) const { return min <= capability && capability <= max; }
  bool operator==(const CapabilityRange&) const = default;
};

}  // namespace kernelhub::trust
