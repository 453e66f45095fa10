// libFuzzer harness: metadata.json (kernel-builder's, from the Hub) through the one parser
// the fetch and load paths share. Properties: no crash; accepted digests name safe paths;
// checking the parsed metadata against its own file list does not crash either.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/trust/safe_path.hpp"

using namespace kernelhub;

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto metadata = trust::parse_kernel_metadata(text);
  if (!metadata) return 0;
  std::map<std::string, std::string> actual;
  for (const auto& [path, digest] : metadata->file_digests) {
    if (!trust::validate_repo_path(path)) __builtin_trap();
    actual.emplace(path, std::string(64, '0'));
  }
  (void)trust::verify_variant_digests(*metadata, actual);
  return 0;
}
