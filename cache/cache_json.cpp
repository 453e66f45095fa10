#include "kernelhub/cache/cache_json.hpp"

namespace kernelhub::cache {

nlohmann::json cached_repos_json(const std::vector<CachedRepo>& repos) {
  auto list = nlohmann::json::array();
  for (const auto& repo : repos) {
    auto revisions = nlohmann::json::array();
    for (const auto& rev : repo.revisions) {
      revisions.push_back({{"commit", rev.commit},
                           {"refs", rev.refs},
                           {"variants", rev.variants},
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

}  // namespace kernelhub::cache
