// When each snapshot variant was last used, for eviction by least recent use:
// <repo folder>/.kernelhub/used/<commit>/<variant>, an empty file whose mtime is the time of
// its last hand-out. Touching a file's times is the whole write, so concurrent recorders
// (kernelhubd's batches, embedded fetches of several processes) never read-modify-write a
// shared document and never lose each other's updates.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache {

using WallClock = std::chrono::system_clock;

// One build variant of one cached commit: the unit of use, of pins and of eviction.
struct VariantRef {
  trust::RepoId repo;
  std::string commit;   // 40 hex
  std::string variant;  // folder name under build/
  // NOLINTNEXTLINE(modernize-use-nullptr): the defaulted <=> (clang-tidy 14 misreads it)
  auto operator<=>(const VariantRef&) const = default;
  std::string str() const { return repo.str() + "@" + commit.substr(0, 12) + " " + variant; }
};

// An embedded fetch leaves a marker already within this of `when` alone: a fetch in a loop
// costs one stat, not one write per call. (kernelhubd batches in memory and writes with no
// resolution.)
inline constexpr std::chrono::seconds kUsageResolution{60};

// Sets the variant's last use to `when` (creating the marker), unless the marker is already
// within `resolution` of it. commit and variant must be names a cache path may hold (a git
// object id; a folder name under build/).
Result<void> record_use(const KernelCache& cache, const VariantRef& ref, WallClock::time_point when,
                        std::chrono::seconds resolution = kUsageResolution);

// The marker's time; nullopt without one (a variant published by another tool, or before
// usage was recorded: eviction then takes the variant folder's own time).
std::optional<WallClock::time_point> recorded_use(const KernelCache& cache, const VariantRef& ref);

}  // namespace kernelhub::cache
