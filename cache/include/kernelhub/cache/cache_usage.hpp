// One scan of a cached repo for what eviction and `kernelhub ls` need: the size of every
// blob, each snapshot's refs and variants, the blobs each variant links, its last use and
// whether a pin keeps it. Symlinks are read, never followed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/cache/pins.hpp"
#include "kernelhub/cache/usage.hpp"
#include "kernelhub/trust/repo_id.hpp"

namespace kernelhub::cache {

struct VariantUsage {
  std::string name;
  std::set<std::string> blobs;   // names under blobs/ its files link to
  std::uint64_t size_bytes = 0;  // those blobs' sizes (blobs shared with others included)
  WallClock::time_point last_used;
  bool recorded = false;  // last_used is a usage marker's (else the folder's own time)
  bool pinned = false;
};

struct SnapshotUsage {
  std::string commit;
  std::vector<std::string> refs;       // refs naming it ("v1", "main", "pr/1")
  std::vector<VariantUsage> variants;  // by name
  std::set<std::string> other_blobs;   // linked from outside build/<variant>/
  std::uint64_t size_bytes = 0;        // every blob the snapshot links, once
};

struct RepoUsage {
  trust::RepoId repo;
  std::filesystem::path path;
  std::map<std::string, std::uint64_t> blobs;  // every blob file and its size
  std::uint64_t size_bytes = 0;                // their sum
  std::vector<SnapshotUsage> snapshots;        // by commit
  std::vector<Pin> pins;
  std::optional<Error> pins_damaged;  // the pins document could not be read: keep everything
};

// The repos in the cache: kernels--* (and legacy models--*) folders that are real folders.
std::vector<trust::RepoId> cached_repo_ids(const KernelCache& cache);

// Scans one repo. A repo folder that vanished scans as empty.
RepoUsage scan_repo_usage(const KernelCache& cache, const trust::RepoId& repo);

}  // namespace kernelhub::cache
