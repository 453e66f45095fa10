// Private to kh_hub_server: the local store as a repository source of the Hub-API routes, and
// its file serving (file_routes.cpp: ranges, LFS redirects, the hooks around each download).
#pragma once

#include "kernelhub/hub/server/repository_source.hpp"
#include "kernelhub/hub/server/server_context.hpp"

namespace kernelhub::hub::server {

class StoreSource final : public RepositorySource {
 public:
  explicit StoreSource(ServerContext& ctx) : ctx_(ctx) {}

  Result<bool> trusted_publisher(const std::string& org) override;
  Result<void> admit(const RepoTarget& /*target*/, const httplib::Request& /*req*/) override {
    return ok();  // a local store serves every repo it holds
  }
  Result<Located> locate(const trust::RepoId& repo, const std::string& rest,
                         bool need_path) override {
    return split_revision(ctx_.store, repo, rest, need_path);
  }
  Result<RepoRefs> refs(const trust::RepoId& repo) override;
  Result<std::vector<TreeEntry>> tree(const trust::RepoId& repo, const std::string& commit,
                                      const std::string& path, bool recursive) override;
  Result<std::optional<TreeEntry>> find(const trust::RepoId& repo, const std::string& commit,
                                        const std::string& path) override;
  Result<std::optional<CommitSummary>> commit(const trust::RepoId& repo,
                                              const std::string& commit) override;
  std::size_t page_size() const override { return ctx_.options.tree_page_size; }
  void serve_file(const httplib::Request& req, httplib::Response& res, const RepoTarget& target,
                  const Located& where) override;

 private:
  ServerContext& ctx_;
};

// GET/HEAD of a file of the store (file_routes.cpp).
void serve_store_file(ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
                      const RepoTarget& target, const Located& where);
// /lfs-objects/{sha256}?repo=&path=&commit=: where LFS files redirect to.
void register_lfs_route(httplib::Server& server, ServerContext& ctx);

}  // namespace kernelhub::hub::server
