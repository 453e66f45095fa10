#include "kernelhub/hub/hub_api.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

#include "kernelhub/hub/api_url.hpp"
#include "kernelhub/trust/kernel_dependency.hpp"
#include "kernelhub/trust/safe_path.hpp"

namespace kernelhub::hub {
namespace {

constexpr int kMaxTreePages = 10'000;
constexpr int kMaxApiRedirects = 5;

}  // namespace

Result<HttpRequest> HubApi::repo_request(const trust::RepoId& repo, RepoKind kind, RepoRoute route,
                                         std::string_view revision, std::string_view path) const {
  KH_TRY_ASSIGN(auto url, repo_url(config_.endpoint, kind, current(repo), route, revision, path));
  HttpRequest request;
  request.url = std::move(url);
  return request;
}

trust::RepoId HubApi::current(const trust::RepoId& repo) const {
  std::lock_guard lock(mutex_);
  const auto it = moves_.find(repo.str());
  return it == moves_.end() ? repo : it->second;
}

std::optional<trust::RepoId> HubApi::moved_to(const trust::RepoId& repo) const {
  std::lock_guard lock(mutex_);
  const auto it = moves_.find(repo.str());
  if (it == moves_.end()) return std::nullopt;
  return it->second;
}

Result<void> HubApi::check_move(const trust::RepoId& from, const trust::RepoId& to) const {
  if (move_check_) return move_check_(from, to);
  if (from.org == to.org) return ok();
  return fail(ErrorCode::untrusted_publisher,
              from.str() + " was moved on the Hub to " + to.str() +
                  ", another publisher, and nothing decided whether to trust it");
}

Result<HttpResponse> HubApi::send_api(const trust::RepoId& repo, HttpRequest request) {
  request.follow_redirects = false;  // followed here, so that each hop can be checked
  const auto home = url_origin(config_.endpoint);
  std::optional<trust::RepoId> moved;  // where this call's redirects lead, once approved
  for (int hops = 0;; ++hops) {
    auto response = http_.send(request);
    if (!response) return response;
    if (response->status < 300 || response->status >= 400) {
      if (moved && *moved != repo) {
        std::lock_guard lock(mutex_);
        moves_.insert_or_assign(repo.str(), *moved);
      }
      return response;
    }
    const auto location = response->header("location");
    if (!location || location->empty()) {
      return fail(ErrorCode::malformed_response, "HTTP " + std::to_string(response->status) +
                                                     " without a Location from " + request.url);
    }
    if (hops >= kMaxApiRedirects) {
      return fail(ErrorCode::malformed_response, "more than " + std::to_string(kMaxApiRedirects) +
                                                     " redirects from " + request.url +
                                                     " (a redirect loop on the Hub?)");
    }
    const auto next = resolve_location(response->url, *location);
    // huggingface_hub follows API redirects anywhere; the answers decide what is downloaded,
    // so they must come from the configured Hub: another origin is refused.
    if (!next || !home || url_origin(*next) != home) {
      return fail(ErrorCode::malformed_response,
                  "the Hub redirected " + request.url + " to another origin (" + *location +
                      "); API calls only follow redirects within HF_ENDPOINT (" + config_.endpoint +
                      "): set HF_ENDPOINT to that origin if you trust it");
    }
    // Sent as is (CURLOPT_PATH_AS_IS): a dot segment would name another path than the one
    // checked below.
    if (has_dot_segment(*next)) {
      return fail(ErrorCode::malformed_response,
                  "the Hub redirected " + request.url + " to a path with a '.' or '..' segment (" +
                      trust::sanitize_for_message(*location) + "); not followed");
    }
    KH_TRY_ASSIGN(auto target, api_repo_in_url(*next, config_.endpoint));
    const trust::RepoId now = moved ? *moved : current(repo);
    if (target && target->repo != now) {
      // A renamed or transferred repo: the new name's publisher is decided before any
      // request names it.
      KH_TRY(check_move(repo, target->repo));
      spdlog::debug("{} redirects to {} on the Hub", now.str(), target->repo.str());
      moved = target->repo;
    }
    request.url = *next;
  }
}

RepoKind HubApi::kind(const trust::RepoId& repo) const {
  std::lock_guard lock(mutex_);
  const auto it = kinds_.find(repo.str());
  return it == kinds_.end() ? RepoKind::kernel : it->second;
}

void HubApi::remember(const trust::RepoId& repo, RepoKind kind) {
  std::lock_guard lock(mutex_);
  kinds_[repo.str()] = kind;
  // A moved repo keeps its type: later calls may name it by its new name.
  if (const auto it = moves_.find(repo.str()); it != moves_.end()) kinds_[it->second.str()] = kind;
}

template <class Build>
Result<HttpResponse> HubApi::send_with_fallback(const trust::RepoId& repo, Build build,
                                                bool follow) {
  const auto send = [&](const HttpRequest& request) {
    return follow ? send_api(repo, request) : http_.send(request);
  };
  bool known = false;
  {
    std::lock_guard lock(mutex_);
    known = kinds_.count(repo.str()) != 0;
  }
  const RepoKind first = kind(repo);
  KH_TRY_ASSIGN(auto request, build(first));
  auto result = send(request);
  if (result) {
    remember(repo, first);
    return result;
  }
  if (known || first != RepoKind::kernel || result.error().code != ErrorCode::repo_not_found)
    return result;
  // Legacy kernel repos live under the model type.
  KH_TRY_ASSIGN(auto model_request, build(RepoKind::model));
  auto fallback = send(model_request);
  if (!fallback) {
    if (fallback.error().code == ErrorCode::repo_not_found) return result;  // the kernel-type error
    return fallback;
  }
  remember(repo, RepoKind::model);
  return fallback;
}

Result<RepoRefs> HubApi::list_refs(const trust::RepoId& repo, bool retry) {
  KH_TRY_ASSIGN(auto response, send_with_fallback(repo, [&](RepoKind kind) {
                  auto request = repo_request(repo, kind, RepoRoute::refs);
                  if (request) request->retry = retry;
                  return request;
                }));
  return parse_refs_json(response.body);
}

Result<std::string> HubApi::resolve_revision(const trust::RepoId& repo, std::string_view revision,
                                             bool retry) {
  if (is_commit_sha(revision)) return std::string(revision);
  KH_TRY_ASSIGN(auto response, send_with_fallback(repo, [&](RepoKind kind) {
                  auto request = repo_request(repo, kind, RepoRoute::revision, revision);
                  if (request) request->retry = retry;
                  return request;
                }));
  return parse_revision_json(response.body);
}

Result<std::string> HubApi::resolve_version(const trust::RepoId& repo, std::uint64_t version,
                                            bool retry) {
  KH_TRY_ASSIGN(auto refs, list_refs(repo, retry));
  std::vector<std::uint64_t> versions;
  for (const auto& branch : refs.branches) {
    const auto found = trust::version_of_branch(branch.name);
    if (!found) continue;
    if (*found == version) return branch.target_commit;
    versions.push_back(*found);
  }
  std::sort(versions.begin(), versions.end());
  std::string names;
  for (const auto v : versions) names += (names.empty() ? "" : ", ") + std::to_string(v);
  return fail(
      ErrorCode::version_not_found,
      "version " + std::to_string(version) + " of " + repo.str() + " not found; " +
          (names.empty() ? "the repo has no version branches" : "available versions: " + names));
}

Result<std::vector<TreeEntry>> HubApi::list_tree(const trust::RepoId& repo, std::string_view commit,
                                                 std::string_view path_in_repo, bool recursive) {
  KH_TRY_ASSIGN(HttpResponse page, send_with_fallback(repo, [&](RepoKind kind) {
                  auto request = repo_request(repo, kind, RepoRoute::tree, commit, path_in_repo);
                  if (request)
                    request->url += recursive ? "?recursive=true&expand=false"
                                              : "?recursive=false&expand=false";
                  return request;
                }));

  std::vector<TreeEntry> entries;
  for (int pages = 1;; ++pages) {
    KH_TRY_ASSIGN(auto parsed, parse_tree_json(page.body, path_in_repo));
    for (auto& entry : parsed) entries.push_back(std::move(entry));
    const auto link = page.header("link");
    if (!link || !parse_link_next(*link)) break;  // the last page
    if (pages >= kMaxTreePages)
      return fail(ErrorCode::malformed_response, "tree listing has too many pages");
    KH_TRY_ASSIGN(auto next, next_page(repo, page));
    if (!next) break;
    page = std::move(*next);
  }
  return entries;
}

Result<bool> HubApi::history_contains(const trust::RepoId& repo, std::string_view commit,
                                      std::string_view ancestor, std::size_t max_commits) {
  if (commit == ancestor) return true;
  KH_TRY_ASSIGN(HttpResponse page, send_with_fallback(repo, [&](RepoKind kind) {
                  return repo_request(repo, kind, RepoRoute::commits, commit);
                }));
  for (std::size_t seen = 0;;) {
    KH_TRY_ASSIGN(auto ids, parse_commits_json(page.body));
    if (ids.empty()) return false;
    for (const auto& id : ids) {
      if (id == ancestor) return true;
      if (++seen >= max_commits) return false;
    }
    KH_TRY_ASSIGN(auto next, next_page(repo, page));
    if (!next) return false;
    page = std::move(*next);
  }
}

Result<std::optional<HttpResponse>> HubApi::next_page(const trust::RepoId& repo,
                                                      const HttpResponse& page) {
  const auto link = page.header("link");
  const auto next = link ? parse_link_next(*link) : std::nullopt;
  if (!next) return std::optional<HttpResponse>{};
  HttpRequest request;
  request.url = next->find("://") == std::string::npos ? config_.endpoint + *next : *next;
  KH_TRY(check_page_url(repo, request.url));
  KH_TRY_ASSIGN(auto response, send_api(repo, request));
  return std::optional<HttpResponse>{std::move(response)};
}

Result<void> HubApi::check_page_url(const trust::RepoId& repo, const std::string& url) const {
  // A next page is the same listing of the same repo, on the configured Hub.
  const auto origin = url_origin(url);
  KH_TRY_ASSIGN(auto named, api_repo_in_url(url, config_.endpoint));
  if (!origin || origin != url_origin(config_.endpoint) || !named || named->repo != current(repo) ||
      has_dot_segment(url)) {
    return fail(ErrorCode::malformed_response,
                "the Hub's next-page link for " + repo.str() + " leaves its listing (" +
                    trust::sanitize_for_message(url) + "); not followed");
  }
  return ok();
}

Result<std::string> HubApi::resolve_url(const trust::RepoId& repo, std::string_view commit,
                                        std::string_view path) const {
  return repo_url(config_.endpoint, kind(repo), current(repo), RepoRoute::resolve, commit, path);
}

Result<std::optional<std::string>> HubApi::read_optional_file(const trust::RepoId& repo,
                                                              std::string_view commit,
                                                              std::string_view path,
                                                              std::size_t cap) {
  KH_TRY_ASSIGN(auto url, resolve_url(repo, commit, path));
  HttpRequest request;
  request.url = std::move(url);
  request.follow_redirects = true;
  request.max_body = cap;
  request.file_size = cap;  // a file: its stall timeout and deadline
  auto response = http_.send(request);
  if (!response) {
    if (response.error().code == ErrorCode::entry_not_found) return std::optional<std::string>();
    return fail(response.error());
  }
  return std::optional<std::string>(std::move(response->body));
}

}  // namespace kernelhub::hub
