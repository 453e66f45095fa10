// Pins: what production needs, kept through every eviction. One document per repo,
// <repo folder>/.kernelhub/pins.json, written whole and atomically under the repo's `pins`
// lock. A pin can only keep files, never remove one: a damaged document keeps the whole repo
// (eviction refuses to judge it) until `kernelhub unpin` or `pin` rewrites it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache {

struct Pin {
  std::string commit;                 // 40 (or 64) hex
  std::vector<std::string> variants;  // sorted, unique; empty: every variant of the commit
  std::string source;                 // what asked for it: "kernels.lock <path>", "revision v1"
  std::string pinned_by;              // "uid 1000"
  std::int64_t pinned_at = 0;         // unix seconds
  bool covers(std::string_view commit_sha, std::string_view variant) const;
  bool operator==(const Pin&) const = default;
};

inline constexpr util::JsonBounds kPinsJson{1u << 20, 8, 100'000};
inline constexpr std::size_t kMaxPinsPerRepo = 4096;

// {"pins": [{"commit", "variants", "source", "pinned_by", "pinned_at"}, ...]}: members of
// the wrong type, a bad commit or variant name, or more than kMaxPinsPerRepo pins fail
// (malformed_response); unknown members are ignored (a newer kernelhub may add some).
Result<std::vector<Pin>> parse_pins(std::string_view text);
std::string pins_to_json(const std::vector<Pin>& pins);

// The repo's pins: empty when it has none; an error when the document cannot be read or
// parsed.
Result<std::vector<Pin>> read_pins(const KernelCache& cache, const trust::RepoId& repo);

// Adds `pin` to the repo's pins (a pin of the same commit is merged: the union of their
// variants, every variant when either has none listed) and returns the repo's pins after.
Result<std::vector<Pin>> add_pin(const KernelCache& cache, const trust::RepoId& repo, Pin pin);
// Removes the pins of `commit` (every pin of the repo without one); returns how many went.
Result<std::size_t> remove_pins(const KernelCache& cache, const trust::RepoId& repo,
                                const std::optional<std::string>& commit);

}  // namespace kernelhub::cache
