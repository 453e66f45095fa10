// The importer's blobs (internal to cache/bundle/): one per distinct blob of a bundle's
// manifest, and the streaming of its archive entry into the cache's blob writer, or, for a
// blob the cache holds intact already, through a hash only.
#pragma once

#include <archive.h>
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/cache/blob_writer.hpp"
#include "kernelhub/cache/bundle/bundle_manifest.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache::bundle {

// A typed error that says nothing was imported (every failure of an import is one).
inline Unexpected bad_archive(ErrorCode code, const std::string& why) {
  return fail(code, "bundle: " + why + "; nothing was imported");
}

struct PlannedBlob {
  std::size_t repo = 0;     // index into the manifest's repos
  BundledFile file;         // the first file with this etag
  bool keep_bytes = false;  // a metadata.json or its signature: kept in memory for the checks
  bool in_cache = false;    // the cache holds it intact: hashed, never written
  bool streamed = false;
  std::optional<BlobWriter> writer;  // once streamed: finished (closed, fsynced), not committed
  std::string bytes;                 // keep_bytes: at most 1 MiB and a byte (the verifiers' cap)
};

// What a non-regular entry is, in words ("a symlink", "a device", ...).
std::string describe_type(mode_t type);

// The manifest: the archive's first entry, a regular file within `limits`.
Result<std::string> read_manifest_entry(archive* a, const BundleLimits& limits);

// Reads the current entry (its header already matched to `blob`: same size) into `blob`,
// through `buffer`, and checks it against the manifest: its etag (sha256 or git blob id) and
// its sha256. `shown` names the entry in errors.
Result<void> stream_blob(archive* a, PlannedBlob& blob, const std::string& shown,
                         const KernelCache& cache, const trust::RepoId& repo,
                         std::vector<char>& buffer);

}  // namespace kernelhub::cache::bundle
