#include "kernelhub/cache/cache_json.hpp"

namespace kernelhub::cache {

nlohmann::json cached_repos_json(const std::vector<CachedRepo>& repos) {
  auto list = nlohmann::json::array();
  for (const auto& repo : repos) {
    auto revisions = nlohmann::json::array();
    for (const auto& rev : repo.revisions) {
      auto names = nlohmann::json::array();
      auto details = nlohmann::json::array();
      for (const auto& v : rev.variants) {
        names.push_back(v.name);
        details.push_back({{"name", v.name},
                           {"size_bytes", v.size_bytes},
                           {"last_used", v.last_used},
                           {"pinned", v.pinned}});
      }
      revisions.push_back({{"commit", rev.commit},
                           {"refs", rev.refs},
                           {"variants", std::move(names)},
                           {"variant_details", std::move(details)},
                           {"size_bytes", rev.size_bytes}});
    }
    nlohmann::json entry = {{"repo", repo.repo.str()},
                            {"path", repo.path.string()},
                            {"size_bytes", repo.size_bytes},
                            {"revisions", std::move(revisions)}};
    // Version branches whose move the rollback guard refused: what is served, what was not.
    auto refused = nlohmann::json::array();
    for (const auto& state : repo.versions) {
      if (!state.refused) continue;
      refused.push_back({{"ref", "v" + std::to_string(state.version)},
                         {"accepted", state.accepted},
                         {"refused", *state.refused}});
    }
    if (!refused.empty()) entry["refused_moves"] = std::move(refused);
    list.push_back(std::move(entry));
  }
  return list;
}

nlohmann::json evicted_json(const std::vector<EvictedVariant>& evicted) {
  auto list = nlohmann::json::array();
  for (const auto& ev : evicted) {
    list.push_back({{"repo", ev.ref.repo.str()},
                    {"commit", ev.ref.commit},
                    {"variant", ev.ref.variant},
                    {"size_bytes", ev.size_bytes},
                    {"last_used", std::chrono::duration_cast<std::chrono::seconds>(
                                      ev.last_used.time_since_epoch())
                                      .count()},
                    {"reason", ev.reason}});
  }
  return list;
}

nlohmann::json gc_report_json(const EvictionReport& report, bool dry_run) {
  return {{"removed_snapshots", report.removed_snapshots},
          {"removed_blobs", report.removed_blobs},
          {"freed_bytes", report.freed_bytes},
          {"evicted", evicted_json(report.evicted)},
          {"cache_bytes", report.cache_bytes},
          {"pinned_bytes", report.pinned_bytes},
          {"free_bytes", report.space.free_bytes},
          {"skipped", report.skipped},
          {"within_bounds", report.within_bounds},
          {"dry_run", dry_run}};
}

}  // namespace kernelhub::cache
