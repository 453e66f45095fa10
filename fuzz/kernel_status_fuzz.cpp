// libFuzzer harness: kernel-status.toml (a Hub artifact that can redirect a fetch to another
// repo). Properties: no crash; a redirect names a valid repo and a non-empty revision.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernelhub/hub/kernel_status.hpp"

using namespace kernelhub;

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto status = hub::parse_kernel_status(text);
  if (!status || !*status) return 0;
  const auto& redirect = **status;
  if (redirect.revision.empty()) __builtin_trap();
  if (!trust::RepoId::parse(redirect.destination.str())) __builtin_trap();
  return 0;
}
