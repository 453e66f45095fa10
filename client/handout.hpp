// Opening and checking the descriptors a client hands back: embedded mode opens each blob
// itself, daemon mode receives them over SCM_RIGHTS; both pass the same checks.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "client/client.hpp"
#include "hub/fetcher.hpp"
#include "trust/result.hpp"
#include "trust/unique_fd.hpp"

namespace kernelhub::client {

// A handed-out fd must be a read-only open of a regular file of the manifest's size.
Result<void> check_handed_fd(int fd, std::uint64_t expected_size, std::string_view what);

// Embedded hand-out: for each file of `result`, reads the snapshot symlink's target name
// and opens blobs/<that name> beneath the repo's blobs/ directory.
Result<std::vector<HandedFile>> open_fetched_files(const cache::KernelCache& cache,
                                                   const hub::FetchResult& result);

}  // namespace kernelhub::client
