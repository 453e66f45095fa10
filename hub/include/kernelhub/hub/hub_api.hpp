// The Hub's REST API for kernel repos: refs, revision -> commit, tree listings, file
// metadata. Kernel repo-type paths are tried first; a RepoNotFound there falls back to the
// model-type paths (legacy kernel repos), and the type that worked is remembered per repo.
// API redirects (renamed or transferred repos) are followed within the endpoint's origin, a
// bounded number of times; a redirect to another repo is approved by the move check first.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/hub/http.hpp"
#include "kernelhub/hub/hub_config.hpp"
#include "kernelhub/hub/listing.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub {

enum class RepoKind { kernel, model };

// What a repo URL asks for (kernelhub/hub/api_url.hpp builds them):
// {endpoint}/api/{kernels|models}/{repo}/refs, .../revision/{rev}, .../tree/{rev}[/{path}],
// .../commits/{rev}, and the file URL {endpoint}{/kernels|}/{repo}/resolve/{rev}/{path}.
enum class RepoRoute { refs, revision, tree, commits, resolve };

class HubApi {
 public:
  // Decides whether an API redirect from `from` to another repo `to` may be followed; it
  // runs before any request names `to`. An error refuses the move and fails the call.
  using MoveCheck = std::function<Result<void>(const trust::RepoId& from, const trust::RepoId& to)>;

  HubApi(HubConfig config, HttpClient& http) : config_(std::move(config)), http_(http) {}

  // Without a check, only moves within the same org are followed.
  void set_move_check(MoveCheck check) { move_check_ = std::move(check); }
  // Where the Hub moved `repo` (a redirect to it was approved and answered); every later
  // call for `repo` goes there directly.
  std::optional<trust::RepoId> moved_to(const trust::RepoId& repo) const;

  // retry=false: one attempt, no backoff or Retry-After wait (a caller with a cached answer
  // to fall back on wants the error at once).
  Result<RepoRefs> list_refs(const trust::RepoId& repo, bool retry = true);
  // A 40-hex revision is returned as is, without a request.
  Result<std::string> resolve_revision(const trust::RepoId& repo, std::string_view revision,
                                       bool retry = true);
  // Branch v<version> -> its commit; version_not_found lists the versions the repo has.
  Result<std::string> resolve_version(const trust::RepoId& repo, std::uint64_t version,
                                      bool retry = true);
  // Whether `ancestor` is in the history of `commit` (the commit itself included), reading
  // at most `max_commits` of it, newest first, page by page (Link rel="next"). A history
  // longer than that without the ancestor answers false, as an unrelated one does.
  Result<bool> history_contains(const trust::RepoId& repo, std::string_view commit,
                                std::string_view ancestor, std::size_t max_commits);
  // Entries under `path_in_repo` ("" for the root), following Link rel="next" pages. Any
  // hostile or malformed entry fails the whole listing (unsafe_path / malformed_response).
  Result<std::vector<TreeEntry>> list_tree(const trust::RepoId& repo, std::string_view commit,
                                           std::string_view path_in_repo, bool recursive);
  // The bytes of a small file at a commit (at most `cap`); nullopt when the Hub answers
  // EntryNotFound (the normal case for optional files such as kernel-status.toml).
  Result<std::optional<std::string>> read_optional_file(const trust::RepoId& repo,
                                                        std::string_view commit,
                                                        std::string_view path, std::size_t cap);

  // {endpoint}/kernels/{repo}/resolve/{commit}/{path} (or the model form for legacy repos);
  // invalid_argument / unsafe_path for a revision or path that repo_url refuses.
  Result<std::string> resolve_url(const trust::RepoId& repo, std::string_view commit,
                                  std::string_view path) const;
  RepoKind kind(const trust::RepoId& repo) const;
  const HubConfig& config() const { return config_; }

 private:
  // A GET of `route` for `repo` (or where the Hub moved it), its URL from repo_url: every
  // request for a repo is built here, from checked parts.
  Result<HttpRequest> repo_request(const trust::RepoId& repo, RepoKind kind, RepoRoute route,
                                   std::string_view revision = {},
                                   std::string_view path = {}) const;
  // A Link rel="next" must stay on the endpoint's origin, on `repo`, without dot segments.
  Result<void> check_page_url(const trust::RepoId& repo, const std::string& url) const;
  // `repo`, or where the Hub moved it.
  trust::RepoId current(const trust::RepoId& repo) const;
  // One API GET for `repo`, following same-origin redirects (kMaxApiRedirects at most).
  Result<HttpResponse> send_api(const trust::RepoId& repo, HttpRequest request);
  Result<void> check_move(const trust::RepoId& from, const trust::RepoId& to) const;
  // The page a listing's Link rel="next" names (relative links are on the endpoint); nullopt
  // on the last page.
  Result<std::optional<HttpResponse>> next_page(const trust::RepoId& repo,
                                                const HttpResponse& page);
  // Sends the request built for each kind in turn (a build error is returned as is) (kernel first
  // unless the repo is known to be a model), falling back on repo_not_found. follow: through
  // send_api; else a 3xx is returned as is.
  template <class Build>
  Result<HttpResponse> send_with_fallback(const trust::RepoId& repo, Build build,
                                          bool follow = true);
  void remember(const trust::RepoId& repo, RepoKind kind);

  HubConfig config_;
  HttpClient& http_;
  MoveCheck move_check_;
  mutable std::mutex mutex_;
  std::map<std::string, RepoKind> kinds_;
  std::map<std::string, trust::RepoId> moves_;  // requested repo -> where the Hub moved it
};

bool is_commit_sha(std::string_view text) noexcept;

// Parsers for the JSON bodies (unit-tested without a server).
Result<RepoRefs> parse_refs_json(std::string_view body);
Result<std::string> parse_revision_json(std::string_view body);
// The commit ids of one page of a revision's history (newest first).
Result<std::vector<std::string>> parse_commits_json(std::string_view body);
// Validates every entry; `under` is the requested folder ("" = root).
Result<std::vector<TreeEntry>> parse_tree_json(std::string_view body, std::string_view under);

}  // namespace kernelhub::hub
