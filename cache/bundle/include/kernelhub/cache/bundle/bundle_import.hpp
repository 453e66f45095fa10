// `kernelhub bundle import`: streams a bundle's entries straight into the cache's blob writer
// (never extracting a tree anywhere), verifies every byte against the manifest (size, sha256,
// the git blob id of non-LFS files) and each variant against its metadata.json digests (and,
// with a signature check, its Sigstore signature), applies the trust rule to every repo and
// checks the cache (no cached snapshot changes, room for the new blobs) before reading a
// blob, and publishes only once the whole bundle verified, all or nothing: blobs, receipts,
// snapshot links, then refs. Hostile archives (links, devices, names outside the manifest,
// duplicates, wrong sizes, truncation, decompression bombs) end in a typed error with nothing
// published. Descriptors stay bounded: a streamed blob waits for the publish as a closed,
// fsynced temp file.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelhub/cache/bundle/bundle_manifest.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache::bundle {

// [signatures] at import: the verdict on one variant, given its metadata.json (blob etag and
// bytes; empty when it has none) and its metadata.json.sigstore (nullopt when the bundle holds
// none), for each of `versions` (the vNs the bundle claims for the commit; none: no binding
// to a version). An error refuses the whole import (enforce); else the receipt to keep (JSON,
// as a fetch keeps it) and the warnings (warn mode) where the signature does not hold.
struct SignatureVerdict {
  std::string receipt;
  std::vector<std::string> warnings;
};
using SignatureCheck = std::function<Result<SignatureVerdict>(
    const trust::RepoId& repo, const std::vector<int>& versions, const std::string& variant,
    const std::string& metadata_etag, std::string_view metadata,
    const std::optional<std::string>& sigstore_bundle)>;

struct ImportOptions {
  BundleLimits limits;
  trust::AdminPolicy policy;
  trust::TrustEnvironment trust_env;
  SignatureCheck signature_check;  // empty: [signatures] mode off (no receipts either)
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
  std::vector<std::string> signature_warnings;  // warn mode: the variants that do not hold
};

// One object per repo: repo, commit, variants, files, refs_written, refs_kept,
// signature_warnings, snapshot (the shape `kernelhub bundle import --json` prints, in and out
// of the daemon).
nlohmann::json imported_json(const std::vector<ImportedRepo>& repos, const KernelCache& cache);

// Reads the bundle from `fd` (from its current offset; a pipe works).
Result<std::vector<ImportedRepo>> import_bundle(int fd, const KernelCache& cache,
                                                const ImportOptions& options);

}  // namespace kernelhub::cache::bundle
