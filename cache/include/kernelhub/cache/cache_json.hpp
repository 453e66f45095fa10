// The JSON shape of a cache listing, shared by `kernelhub ls --json`, the embedded client
// and the daemon's `ls` reply (docs/protocol.md).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "kernelhub/cache/kernel_cache.hpp"

namespace kernelhub::cache {

// [{"repo","path","size_bytes","revisions":[{"commit","refs","variants","size_bytes"}]}]
nlohmann::json cached_repos_json(const std::vector<CachedRepo>& repos);

}  // namespace kernelhub::cache
