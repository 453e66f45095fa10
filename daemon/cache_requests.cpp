#include "cache_requests.hpp"

#include <spdlog/spdlog.h>

#include "kernelhub/cache/cache_json.hpp"
#include "kernelhub/cache/pinning.hpp"

namespace kernelhub::daemon {

Error refused_for(uid_t uid, std::string_view what) {
  spdlog::info("refused uid {} the right to {}: not in [daemon] import_users/import_groups", uid,
               what);
  return Error{ErrorCode::permission_denied,
               "uid " + std::to_string(uid) + " may not " + std::string(what) +
                   " (ask the admin: [daemon] import_users / import_groups), or use your own "
                   "cache with --cache-dir"};
}

trust::CacheSettings gc_bounds(const proto::GcRequest& request) {
  trust::CacheSettings bounds;
  bounds.max_size = request.max_size;
  bounds.min_free_bytes = request.min_free_bytes;
  bounds.min_free_percent = request.min_free_percent;
  if (request.max_unused_age_s)
    bounds.max_unused_age =
        std::chrono::seconds(static_cast<std::int64_t>(*request.max_unused_age_s));
  return bounds;
}

proto::GcReply gc_reply(proto::RequestId id, const cache::EvictionReport& report, bool dry_run) {
  proto::GcReply out;
  out.id = id;
  out.removed_snapshots = report.removed_snapshots;
  out.removed_blobs = report.removed_blobs;
  out.freed_bytes = report.freed_bytes;
  out.evicted = cache::evicted_json(report.evicted);
  out.cache_bytes = report.cache_bytes;
  out.pinned_bytes = report.pinned_bytes;
  out.free_bytes = report.space.free_bytes;
  out.skipped = report.skipped;
  out.within_bounds = report.within_bounds;
  out.dry_run = dry_run;
  return out;
}

Result<proto::PinReply> pin_request(const std::string& root, const trust::CacheSettings& limits,
                                    const proto::PinRequest& request,
                                    const std::string& pinned_by) {
  const cache::KernelCache cache(root);
  proto::PinReply reply;
  reply.id = request.id;
  if (request.action != "list") {
    auto repo = trust::RepoId::parse(request.repo.value_or(""));
    if (!repo) return fail(ErrorCode::invalid_request, repo.error().message);
    if (request.action == "add") {
      const cache::PinSpec spec{*repo, request.revision.value_or(""), request.variants,
                                request.source, pinned_by};
      KH_TRY(cache::pin_revision(cache, spec, limits.max_size));
      spdlog::info("{} pinned {}@{} ({})", pinned_by, repo->str(), spec.revision,
                   request.source.empty() ? "no source given" : request.source);
    } else {
      KH_TRY_ASSIGN(reply.removed, cache::remove_pins(cache, *repo, request.revision));
      spdlog::info("{} removed {} pin(s) of {}", pinned_by, reply.removed, repo->str());
    }
  }
  reply.repos = cache::pins_listing_json(cache);
  return reply;
}

}  // namespace kernelhub::daemon
