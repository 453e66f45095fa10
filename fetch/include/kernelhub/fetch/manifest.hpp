// What a fetch served, as every room passes it on: one commit's verified files for the
// selected variants, and what the user must be told about how they were served. The fetcher
// builds it, kernelhubd hands it out (proto converts it to and from the `fetched` frame), the
// client returns it to apps and the CLI prints it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "kernelhub/trust/repo_id.hpp"

namespace kernelhub::fetch {

struct ManifestFile {
  std::string path;  // repo-relative, e.g. build/<variant>/__init__.py
  std::uint64_t size = 0;
  std::string sha256;  // hex
  // The blob's name in the cache (its git sha1 or LFS sha256), which kernelhubd opens to hand
  // the file out. Not sent to clients: they get a descriptor.
  std::string etag;
  bool operator==(const ManifestFile&) const = default;
};

struct Manifest {
  // May differ from the repo asked for: the Hub renamed it, or its kernel-status redirects.
  trust::RepoId repo;
  std::string commit;
  std::vector<std::string> variants;
  std::filesystem::path snapshot_path;  // snapshots/<commit>; variants under build/
  std::vector<ManifestFile> files;

  bool from_cache = false;  // served without contacting the Hub
  // Non-empty when the Hub failed (unreachable, 5xx, 429, 401, ...) and the cached snapshot
  // was served instead: the Hub's error, for the user to see.
  std::string cache_fallback;
  // Non-empty when the Hub moved the requested vN to a commit that does not descend from the
  // one accepted before: what was refused (the accepted commit was served instead).
  std::string refused_move;
  // [signatures] warn mode: one line per served variant whose signature does not hold.
  std::vector<std::string> signature_warnings;

  bool operator==(const Manifest&) const = default;
};

}  // namespace kernelhub::fetch
