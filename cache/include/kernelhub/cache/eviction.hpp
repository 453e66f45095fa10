// Keeping the cache within its bounds ([cache] of the admin policy): least recently used
// variants go first, then the snapshots left without a variant and the blobs nothing links
// any more. Never a pinned variant, never a file another snapshot still links, never
// anything in a repo a fetch holds (KernelCache::hold_repo: that repo is skipped this time).
//
// Each removal is a rename into <repo>/.kernelhub/trash (atomic: a variant is whole or
// gone), refs naming a snapshot go before the snapshot, blobs after every link to them. A
// crash at any point leaves a cache that `kernelhub verify` and huggingface_hub's scan find
// consistent; the next eviction or gc empties the trash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/cache/usage.hpp"
#include "kernelhub/trust/cache_settings.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache {

struct FileSystemSpace {
  std::uint64_t size_bytes = 0;
  std::uint64_t free_bytes = 0;  // available to an unprivileged writer
};
// statvfs of the file system holding `dir`.
Result<FileSystemSpace> file_system_space(const std::filesystem::path& dir);
using SpaceProbe = std::function<Result<FileSystemSpace>(const std::filesystem::path&)>;

struct EvictionOptions {
  trust::CacheSettings limits;
  // `kernelhub gc`: snapshots no ref names (and no pin keeps) go too, whatever the bounds.
  bool remove_unreferenced = false;
  // A download about to start needs this many bytes free, besides min_free.
  std::uint64_t reserve_bytes = 0;
  bool dry_run = false;  // plan and report; remove nothing
  // Variants used (or published) less than this ago stay: kernelhubd's passes run beside
  // hand-outs, and a variant it just published is about to be opened.
  std::chrono::seconds recent_grace{0};
  WallClock::time_point now = WallClock::now();
  SpaceProbe space;  // file_system_space when empty (tests pass a small disk)
  // Called before each variant is removed (the log; tests stop a process there).
  std::function<void(const VariantRef&)> on_remove;
};

struct EvictedVariant {
  VariantRef ref;
  std::uint64_t size_bytes = 0;  // the blobs it linked (shared ones included)
  WallClock::time_point last_used;
  std::string reason;  // "max_size 1.0 GiB exceeded", "unused for 31 days", "no ref names it"
};

struct EvictionReport {
  std::vector<EvictedVariant> evicted;  // removed, or planned with dry_run
  std::size_t removed_snapshots = 0;
  std::size_t removed_blobs = 0;
  std::uint64_t freed_bytes = 0;  // blob bytes removed
  std::uint64_t cache_bytes = 0;  // blob bytes before
  std::uint64_t pinned_bytes = 0;
  FileSystemSpace space;  // before
  // Repos left alone: a fetch held them, or their pins could not be read.
  std::vector<std::string> skipped;
  // False when what may not go (pinned, in use) alone keeps the cache over a bound.
  bool within_bounds = true;
};

Result<EvictionReport> evict(const KernelCache& cache, const EvictionOptions& options);

// What `min_free` asks of a file system of this size: the bytes, or the percentage of it.
std::uint64_t required_free_bytes(const trust::CacheSettings& limits, const FileSystemSpace& space);

}  // namespace kernelhub::cache
