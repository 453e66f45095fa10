// libFuzzer harness: kernels.lock (a file a user or another team hands over) through the one
// reader of both formats. Properties: no crash; an accepted lock writes back in its own
// format and that text parses to the same entries (the writer's round trip).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernelhub/trust/lockfile.hpp"

using namespace kernelhub;

namespace {

bool same_entries(const trust::Lockfile& a, const trust::Lockfile& b) {
  if (a.entries.size() != b.entries.size()) return false;
  for (const auto& entry : a.entries) {
    const auto* other = b.find(entry.repo);
    if (other == nullptr) return false;
    if (a.format == trust::LockFormat::legacy &&
        (other->commit != entry.commit || other->variant_hashes != entry.variant_hashes)) {
      return false;
    }
  }
  return true;
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto lock = trust::parse_lockfile(text);
  if (!lock) return 0;
  auto written = trust::write_lockfile(*lock, lock->format);
  if (!written) __builtin_trap();
  auto again = trust::parse_lockfile(*written);
  if (!again || !same_entries(*lock, *again)) __builtin_trap();
  auto twice = trust::write_lockfile(*again, again->format);
  if (!twice || *twice != *written) __builtin_trap();
  return 0;
}
