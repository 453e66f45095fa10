// `kernelhub bundle create`: writes verified cache files into one .tar.zst (libarchive): the
// manifest first, then each distinct blob of each repo once, streamed from an open
// descriptor and re-hashed on the way (a byte that differs from the manifest fails the
// bundle). The output appears under its name only when complete.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "kernelhub/cache/bundle/bundle_manifest.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::cache::bundle {

// One repo to bundle: its manifest entry and, for each of its files, a read-only descriptor
// of the bytes (in the order of repo.files).
struct BundleSource {
  BundledRepo repo;
  std::vector<UniqueFd> fds;
};

struct BundleStats {
  std::uint64_t content_bytes = 0;  // uncompressed blob bytes written
  std::uint64_t blobs = 0;
  std::uint64_t archive_bytes = 0;  // size of the .tar.zst
};

// zstd level 3: libzstd's default, the speed/size balance `tar --zstd` uses.
Result<BundleStats> write_bundle(const std::filesystem::path& out,
                                 const std::vector<BundleSource>& sources, int zstd_level = 3);

}  // namespace kernelhub::cache::bundle
