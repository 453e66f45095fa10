// Cache maintenance for `kernelhub verify` / `gc` and the daemon: re-hash every blob against
// its name, and drop what no ref or snapshot needs any more. Both stay inside the cache
// root: symlinks are read, never followed out of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache {

struct CorruptBlob {
  std::string repo;    // org/name
  std::string blob;    // file name under blobs/ (the etag)
  std::string reason;  // e.g. "sha256 mismatch", "not a regular file"
};

struct VerifyReport {
  std::size_t checked = 0;
  std::vector<CorruptBlob> corrupt;  // already removed from the cache
};

// Re-hashes every blob by its name (64 hex: sha256 of the content; 40 hex: git blob sha1)
// in every repo, or only in `only`. Corrupt blobs are removed so the next fetch
// downloads them again; snapshot symlinks to them dangle until then.
Result<VerifyReport> verify_cache(const KernelCache& cache,
                                  std::optional<trust::RepoId> only = std::nullopt);

struct GcReport {
  std::size_t removed_snapshots = 0;
  std::size_t removed_blobs = 0;
  std::uint64_t freed_bytes = 0;
};

// Removes snapshots no ref points to, then blobs no remaining snapshot symlink references.
// Temps (*.incomplete) are left to sweep_stale_temps.
Result<GcReport> collect_garbage(const KernelCache& cache);

}  // namespace kernelhub::cache
