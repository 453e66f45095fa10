// The JSON shape of a cache listing, shared by `kernelhub ls --json`, the embedded client
// and the daemon's `ls` reply (docs/protocol.md).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "kernelhub/cache/eviction.hpp"
#include "kernelhub/cache/kernel_cache.hpp"

namespace kernelhub::cache {

// [{"repo","path","size_bytes","revisions":[{"commit","refs","variants","variant_details",
// "size_bytes"}]}]; variant_details: [{"name","size_bytes","last_used","pinned"}].
nlohmann::json cached_repos_json(const std::vector<CachedRepo>& repos);

// [{"repo","commit","variant","size_bytes","last_used","reason"}] (variant "" for a snapshot
// that had none); last_used in unix seconds.
nlohmann::json evicted_json(const std::vector<EvictedVariant>& evicted);

// `kernelhub gc --json`, embedded or through kernelhubd (the `gc` reply less type and id).
nlohmann::json gc_report_json(const EvictionReport& report, bool dry_run);

}  // namespace kernelhub::cache
