// libFuzzer harness: a repo's pins.json (cache/pins.hpp; a file in the cache, which a pin
// made by another tool or a damaged disk may have written). Properties: no crash; what
// parses holds only git object ids as commits and sorted, unique variant names, and survives a
// round trip through pins_to_json unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernelhub/cache/pins.hpp"
#include "kernelhub/trust/lockfile.hpp"

using namespace kernelhub;

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto pins = cache::parse_pins(text);
  if (!pins) return 0;
  if (pins->size() > cache::kMaxPinsPerRepo) __builtin_trap();
  for (const auto& pin : *pins) {
    if (!trust::is_git_object_id(pin.commit)) __builtin_trap();
    for (std::size_t i = 1; i < pin.variants.size(); ++i) {
      if (!(pin.variants[i - 1] < pin.variants[i])) __builtin_trap();
    }
  }
  auto again = cache::parse_pins(cache::pins_to_json(*pins));
  if (!again || *again != *pins) __builtin_trap();
  return 0;
}
