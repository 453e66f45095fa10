// What a full disk under the cache means to its user.
#pragma once

#include <filesystem>

#include "kernelhub/util/result.hpp"

namespace kernelhub::cache {

// A disk_full error of a write into the cache at `cache_root`, told what to do: which cache
// is full and how to make room. Any other error is returned as it is.
Error explain_disk_full(Error error, const std::filesystem::path& cache_root);

}  // namespace kernelhub::cache
