// kernelhubd's local Hub (local_hub.hpp) as a repository source of the Hub-API route table
// (hub/server/repository_source.hpp): listings from the upstream memo, file bytes from the
// verified cache through the fetch service, trust decided per request by the admin policy.
#pragma once

#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/daemon/fetch_service.hpp"
#include "kernelhub/daemon/upstream_metadata.hpp"
#include "kernelhub/hub/server/repository_source.hpp"

namespace kernelhub::daemon {

class CacheSource final : public hub::server::RepositorySource {
 public:
  CacheSource(FetchService& service, UpstreamMetadata& metadata, AtomicCounters& counters)
      : service_(service), metadata_(metadata), counters_(counters) {}

  // The Hub API over this source on `server`, with the Hub's error replies for the rest.
  void register_on(httplib::Server& server);

  Result<bool> trusted_publisher(const std::string& org) override;
  Result<void> admit(const hub::server::RepoTarget& target, const httplib::Request& req) override;
  // "<revision>[/<path>]": the revision is one segment (a branch, tag or commit name).
  Result<hub::server::Located> locate(const trust::RepoId& repo, const std::string& rest,
                                      bool need_path) override;
  Result<hub::RepoRefs> refs(const trust::RepoId& repo) override { return metadata_.refs(repo); }
  Result<std::vector<hub::TreeEntry>> tree(const trust::RepoId& repo, const std::string& commit,
                                           const std::string& path, bool recursive) override {
    return metadata_.tree(repo, commit, path, recursive);
  }
  Result<std::optional<hub::TreeEntry>> find(const trust::RepoId& repo, const std::string& commit,
                                             const std::string& path) override;
  Result<std::optional<hub::server::CommitSummary>> commit(const trust::RepoId& /*repo*/,
                                                           const std::string& /*commit*/) override {
    return std::optional<hub::server::CommitSummary>{};  // no history kept
  }
  // One page: the listing is already bounded upstream-side.
  std::size_t page_size() const override { return SIZE_MAX; }
  void serve_file(const httplib::Request& req, httplib::Response& res,
                  const hub::server::RepoTarget& target,
                  const hub::server::Located& where) override;
  void on_error(const Error& error) override { counters_.count_error(error.code); }

 private:
  Result<HandOut> fetch_variant(const trust::RepoId& repo, const std::string& commit,
                                const std::string& variant, const std::string& remote_addr);

  FetchService& service_;
  UpstreamMetadata& metadata_;
  AtomicCounters& counters_;
};

}  // namespace kernelhub::daemon
