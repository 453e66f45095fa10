// Internal to the connection handler: the cache maintenance requests (`gc` with bounds,
// `pin`) turned into calls of the cache and back into replies.
#pragma once

#include <string>
#include <string_view>

#include <sys/types.h>

#include "kernelhub/cache/eviction.hpp"
#include "kernelhub/proto/messages.hpp"
#include "kernelhub/trust/cache_settings.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::daemon {

// The refusal of a change to the shared cache by a peer outside the import rule.
Error refused_for(uid_t uid, std::string_view what);

// A gc request's bounds (the request names at least one).
trust::CacheSettings gc_bounds(const proto::GcRequest& request);
proto::GcReply gc_reply(proto::RequestId id, const cache::EvictionReport& report, bool dry_run);

// add / remove / list, against the cache at `root`; `pinned_by` names the peer.
Result<proto::PinReply> pin_request(const std::string& root, const trust::CacheSettings& limits,
                                    const proto::PinRequest& request, const std::string& pinned_by);

}  // namespace kernelhub::daemon
