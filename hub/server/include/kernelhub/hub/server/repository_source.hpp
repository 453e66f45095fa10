// The Hub API as one route table over a source of repositories. Two sources serve it:
// `kernelhub serve`'s local store (store_source.cpp) and kernelhubd's verified cache with its
// upstream (daemon/cache_source.cpp). The table owns the URL patterns, the order of checks and
// every JSON shape the clients read (research/hub-protocol.md §1); a source owns what its
// repos hold, how a URL's revision is split from its path, and how a file's bytes are served.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/hub/listing.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub::server {

// A repo route's repo and type ("kernels" or "models").
struct RepoTarget {
  std::string type;
  trust::RepoId repo;
};

// A URL's "<revision>[/<path>]", resolved.
struct Located {
  std::string revision;  // as the URL names it
  std::string commit;    // 40 hex
  std::string path;      // "" for the repo root
};

// One commit of a repo's history.
struct CommitSummary {
  std::string id;
  std::string message;
  std::int64_t timestamp = 0;  // seconds since the epoch
  std::optional<std::string> parent;
};

class RepositorySource {
 public:
  RepositorySource() = default;
  virtual ~RepositorySource() = default;
  RepositorySource(const RepositorySource&) = delete;
  RepositorySource& operator=(const RepositorySource&) = delete;

  // Whether `org` is a trusted kernel publisher (organization overview); repo_not_found when
  // the source knows no such org.
  virtual Result<bool> trusted_publisher(const std::string& org) = 0;
  // Before any repo route answers: the source may refuse the repo.
  virtual Result<void> admit(const RepoTarget& target, const httplib::Request& req) = 0;
  // Splits and resolves a URL's "<revision>[/<path>]" (need_path: the path may not be empty).
  virtual Result<Located> locate(const trust::RepoId& repo, const std::string& rest,
                                 bool need_path) = 0;
  virtual Result<RepoRefs> refs(const trust::RepoId& repo) = 0;
  // Entries under `path` at `commit`, sorted by path: direct children, or every file and
  // folder below when recursive.
  virtual Result<std::vector<TreeEntry>> tree(const trust::RepoId& repo, const std::string& commit,
                                              const std::string& path, bool recursive) = 0;
  // One entry, if the commit has it.
  virtual Result<std::optional<TreeEntry>> find(const trust::RepoId& repo,
                                                const std::string& commit,
                                                const std::string& path) = 0;
  // A commit's message, time and parent; nullopt when the source keeps no history.
  virtual Result<std::optional<CommitSummary>> commit(const trust::RepoId& repo,
                                                      const std::string& commit) = 0;
  // Entries per page of tree and commit listings.
  virtual std::size_t page_size() const = 0;
  // Answers GET or HEAD of the file at `where` (found by locate with need_path).
  virtual void serve_file(const httplib::Request& req, httplib::Response& res,
                          const RepoTarget& target, const Located& where) = 0;
  // Every error the table replies with passes here first (kernelhubd counts them).
  virtual void on_error(const Error& /*error*/) {}
};

// "scheme://host[:port]" as the client addressed the server (its Host header), for the Link
// URLs of paged listings and redirects; `fallback` when the request has no sane Host.
std::string base_url(const httplib::Request& req, const std::string& scheme,
                     const std::string& fallback);

struct HubRoutesOptions {
  std::string scheme = "http://";
  std::function<std::string()> fallback_host;  // "host:port", once the server is bound
};

// The Hub API over `source`, which must outlive `server`: organization overview, repo info
// (also by revision), refs, commits, tree (paged: Link rel="next"), paths-info, and the resolve
// URLs of both repo types.
void register_hub_routes(httplib::Server& server, RepositorySource& source,
                         HubRoutesOptions options);

// Replies with `error` as the Hub would (status, X-Error-Code, X-Error-Message), whole (the
// request's ranges are dropped), after the source has seen it.
void send_source_error(RepositorySource& source, const httplib::Request& req,
                       httplib::Response& res, const Error& error);

}  // namespace kernelhub::hub::server
