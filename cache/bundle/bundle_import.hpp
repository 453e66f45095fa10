// `kernelhub bundle import`: streams a bundle's entries straight into the cache's blob writer
// (never extracting a tree anywhere), verifies every byte against the manifest (size, sha256,
// the git blob id of non-LFS files) and each variant against its metadata.json digests,
// applies the trust rule to every repo before reading a blob, and publishes only once the
// whole bundle verified: snapshot links, then refs. Hostile archives (links, devices, names
// outside the manifest, duplicates, wrong sizes, truncation, decompression bombs) end in a
// typed error with nothing published.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/bundle/bundle_manifest.hpp"
#include "cache/kernel_cache.hpp"
#include "trust/environment.hpp"
#include "trust/policy.hpp"
#include "trust/result.hpp"

namespace kernelhub::cache::bundle {

struct ImportOptions {
  BundleLimits limits;
  trust::AdminPolicy policy;
  trust::TrustEnvironment trust_env;
};

struct ImportedRepo {
  trust::RepoId repo;
  std::string commit;
  std::vector<std::string> variants;
  std::size_t files = 0;
  std::vector<std::string> refs_written;
  // vN refs left where they were: the cache accepted another commit for vN from the Hub,
  // and a bundle (no history to check) never moves a version branch. An import never
  // writes the accepted commit itself (the version state): only a fetch from the Hub does.
  std::vector<std::string> refs_kept;
};

// One object per repo: repo, commit, variants, files, refs_written, refs_kept, snapshot (the
// shape `kernelhub bundle import --json` prints, in and out of the daemon).
nlohmann::json imported_json(const std::vector<ImportedRepo>& repos, const KernelCache& cache);

// Reads the bundle from `fd` (from its current offset; a pipe works).
Result<std::vector<ImportedRepo>> import_bundle(int fd, const KernelCache& cache,
                                                const ImportOptions& options);

}  // namespace kernelhub::cache::bundle
