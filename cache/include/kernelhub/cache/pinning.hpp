// `kernelhub pin`, the one implementation behind the CLI's embedded mode and kernelhubd: a
// revision resolved to the commit the cache holds, the pins' total size checked against
// max_size when made, and the listing `pin --list` prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelhub/cache/cache_usage.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/cache/pins.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache {

struct PinSpec {
  trust::RepoId repo;
  // A commit (40 hex, cached or not: a lockfile's pin may come before its download), or a ref
  // the cache holds ("v1", "main").
  std::string revision;
  std::vector<std::string> variants;  // empty: every variant of the commit
  std::string source;                 // "kernels.lock <path>", "revision v1"
  std::string pinned_by;
};

// Records the pin. Refused (ErrorCode::policy) when the pinned variants of the whole cache,
// this one included, would exceed `max_size`: the message gives the sizes.
Result<std::vector<Pin>> pin_revision(const KernelCache& cache, const PinSpec& spec,
                                      std::optional<std::uint64_t> max_size,
                                      WallClock::time_point now = WallClock::now());

// The bytes the pinned variants of one scanned repo hold (each blob once).
std::uint64_t pinned_bytes(const RepoUsage& repo);

// `pin --list`: [{repo, pins: [{commit, variants, source, pinned_by, pinned_at, size_bytes,
// cached}]}], plus {repo, error} for a repo whose pins cannot be read.
nlohmann::json pins_listing_json(const KernelCache& cache);

}  // namespace kernelhub::cache
