#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/hub/server/server_context.hpp"
#include "store_source.hpp"

namespace kernelhub::hub::server {

ServerContext::ServerContext(ServerOptions opts)
    : options(std::move(opts)),
      store(options.root),
      hooks(options.hooks ? options.hooks : std::make_shared<ServeHooks>()),
      source(std::make_unique<StoreSource>(*this)) {}

ServerContext::~ServerContext() = default;

std::string ServerContext::base_url(const httplib::Request& req) const {
  return server::base_url(req, scheme(), options.bind_host + ":" + std::to_string(port));
}

Result<Located> split_revision(const LocalStore& store, const trust::RepoId& repo,
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
    if (commit) return Located{revision, *commit, cut < rest.size() ? rest.substr(cut + 1) : ""};
    if (commit.error().code != ErrorCode::revision_not_found) return fail(commit.error());
  }
  if (!store.has_repo(repo))
    return fail(ErrorCode::repo_not_found, "repository " + repo.str() + " not found");
  const std::string shown = rest.substr(0, rest.find('/'));
  return fail(ErrorCode::revision_not_found, "revision '" + shown + "' not found in " + repo.str());
}

void register_store_routes(httplib::Server& server, ServerContext& ctx) {
  register_hub_routes(
      server, *ctx.source,
      {ctx.scheme(), [&ctx] { return ctx.options.bind_host + ":" + std::to_string(ctx.port); }});
  register_lfs_route(server, ctx);
}

}  // namespace kernelhub::hub::server
