#include "kernelhub/cache/disk_full.hpp"

namespace kernelhub::cache {

Error explain_disk_full(Error error, const std::filesystem::path& cache_root) {
  if (error.code != ErrorCode::disk_full) return error;
  error.message += ". The cache at " + cache_root.string() +
                   " is out of space (or over a disk quota): free space on its filesystem, run "
                   "`kernelhub gc` to remove snapshots no ref names and their blobs, or point "
                   "HF_HUB_CACHE at a larger disk";
  return error;
}

}  // namespace kernelhub::cache
