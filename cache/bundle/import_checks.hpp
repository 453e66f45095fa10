// What an import checks in the cache before it streams a byte of the bundle: that it changes
// no snapshot the cache holds, which blobs it already holds intact (those are hashed on the
// way, never written again), and that its file system has room for the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernelhub/cache/bundle/bundle_manifest.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache::bundle {

// hash_mismatch when the cache holds `repo.commit` and a bundled file would change it: a path
// it holds as another blob, as a folder or below a file, or a file added to a variant folder
// it holds. A commit's files never change, so such a bundle is not of the commit it names.
Result<void> check_snapshot_unchanged(const KernelCache& cache, const BundledRepo& repo);

// The cache holds blobs/<etag> and its bytes still hash to the etag.
bool has_intact_blob(const KernelCache& cache, const trust::RepoId& repo, const BundledFile& file);

// disk_full, naming the cache, what it needs and what it has, when the free space of the
// cache's file system (for this user) is less than the blobs of `new_blob_sizes` take, each
// rounded up to the file system's block size.
Result<void> check_free_space(const KernelCache& cache,
                              const std::vector<std::uint64_t>& new_blob_sizes);

}  // namespace kernelhub::cache::bundle
