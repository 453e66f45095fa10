#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/hub/server/server_context.hpp"

namespace kernelhub::hub::server {

std::string ServerContext::base_url(const httplib::Request& req) const {
  const std::string host = req.get_header_value("Host");
  const bool sane = !host.empty() && host.size() < 256 &&
                    host.find_first_not_of(
                        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") ==
                        std::string::npos;
  return scheme() + (sane ? host : options.bind_host + ":" + std::to_string(port));
}

std::optional<RepoTarget> repo_target(httplib::Response& res, const std::string& type,
                                      const std::string& org, const std::string& name) {
  auto repo = trust::RepoId::parse(org + "/" + name);
  if (!repo) {
    http::send_error(res, 404, "RepoNotFound", repo.error().message);
    return std::nullopt;
  }
  return RepoTarget{type, std::move(*repo)};
}

Result<RevisionAndPath> split_revision(const LocalStore& store, const trust::RepoId& repo,
                                       const std::string& rest, bool need_path) {
  std::vector<std::size_t> cuts;  // candidate revision ends, longest first
  if (!need_path) cuts.push_back(rest.size());
  for (auto pos = rest.rfind('/'); pos != std::string::npos && pos > 0;
       pos = rest.rfind('/', pos - 1)) {
    cuts.push_back(pos);
  }
  for (const auto cut : cuts) {
    const std::string revision = rest.substr(0, cut);
    auto commit = store.resolve(repo, revision);
    if (commit) {
      return RevisionAndPath{revision, *commit, cut < rest.size() ? rest.substr(cut + 1) : ""};
    }
    if (commit.error().code != ErrorCode::revision_not_found) return fail(commit.error());
  }
  if (!store.has_repo(repo))
    return fail(ErrorCode::repo_not_found, "repository " + repo.str() + " not found");
  const std::string shown = rest.substr(0, rest.find('/'));
  return fail(ErrorCode::revision_not_found, "revision '" + shown + "' not found in " + repo.str());
}

}  // namespace kernelhub::hub::server
