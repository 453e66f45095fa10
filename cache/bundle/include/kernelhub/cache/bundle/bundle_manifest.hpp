// The manifest of an air-gapped bundle (`kernelhub-bundle.json`, the first entry of the
// .tar.zst): which repos at which commits, the refs they satisfy, the variants, and every
// file's repo path, size, cache etag and sha256. Parsed strictly and within bounds: a bundle
// is outside input, whoever hands it over.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache::bundle {

inline constexpr std::string_view kManifestName = "kernelhub-bundle.json";
inline constexpr std::string_view kFormat = "kernelhub-bundle";
inline constexpr int kFormatVersion = 1;

struct BundleLimits {
  std::size_t max_manifest_bytes = 16u << 20;
  std::size_t max_repos = 1024;
  std::size_t max_files = 100'000;
  // Refs one repo may claim (each is a file written, and each vN a signature decision).
  std::size_t max_refs = 64;
  // The most content one bundle may declare (and so write into the cache).
  std::uint64_t max_total_bytes = std::uint64_t{64} << 30;
};

struct BundledFile {
  std::string path;  // repo-relative: build/<variant>/...
  std::uint64_t size = 0;
  std::string etag;    // the cache's blob name: sha256 (LFS) or git blob sha1
  std::string sha256;  // of the content, hex
};

struct BundledRepo {
  trust::RepoId repo;
  std::string commit;             // 40 hex
  std::vector<std::string> refs;  // what the commit satisfies: "v1", "main", ...
  std::vector<std::string> variants;
  std::vector<BundledFile> files;
};

struct BundleManifest {
  std::vector<BundledRepo> repos;
  std::uint64_t total_bytes() const;
};

// The archive entry name of a blob: blobs/<org>/<name>/<etag>.
std::string blob_entry_name(const trust::RepoId& repo, std::string_view etag);

std::string to_json_text(const BundleManifest& manifest);
// malformed_response (naming the member) for a manifest that is not this format, has an
// unknown member, a bad repo id, commit, ref, variant, path, etag or digest, a file outside
// its variants, a repo twice, a path twice, or a path that is also another's folder;
// too_large beyond `limits` (files, refs, repos, bytes).
Result<BundleManifest> parse_manifest(std::string_view text, const BundleLimits& limits = {});

}  // namespace kernelhub::cache::bundle
