// Cache maintenance for `kernelhub verify` / `gc` and the daemon: re-hash every blob against
// its name, and drop what no ref or snapshot needs any more. Both stay inside the cache
// root: symlinks are read, never followed out of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/cache/eviction.hpp"
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

using GcReport = EvictionReport;

// `kernelhub gc`: removes snapshots no ref points to and no pin keeps, then whatever `limits`
// want gone (eviction.hpp), then blobs no remaining snapshot links. Repos a fetch holds are
// skipped. Temps (*.incomplete) are left to sweep_stale_temps.
Result<GcReport> collect_garbage(const KernelCache& cache, EvictionOptions options = {});

}  // namespace kernelhub::cache
