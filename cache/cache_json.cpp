#include "cache/cache_json.hpp"

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
    list.push_back({{"repo", repo.repo.str()},
                    {"path", repo.path.string()},
                    {"size_bytes", repo.size_bytes},
                    {"revisions", std::move(revisions)}});
  }
  return list;
}

}  // namespace kernelhub::cache
