// The Hub-API route table (repository_source.hpp): /api/organizations/{org}/overview,
// /api/{kernels,models}/{org}/{name}[/revision/{rev}|/refs|/commits/{rev}|/tree/{rev}[/{path}]
// |/paths-info/{rev}] and the resolve URLs, each checked in one order (repo id, the source's
// admission, the revision), with the JSON shapes of research/hub-protocol.md §1.a-1.c.
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/hub/server/local_store.hpp"
#include "kernelhub/hub/server/repository_source.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::hub::server {
namespace {

using Json = nlohmann::json;

constexpr const char* kRepoApi = R"(/api/(kernels|models)/([^/]+)/([^/]+))";
constexpr std::size_t kMaxCommitPage = 1'000'000;

struct Table {
  RepositorySource& source;
  HubRoutesOptions options;

  void error(const httplib::Request& req, httplib::Response& res, const Error& e) const {
    send_source_error(source, req, res, e);
  }
  std::string base(const httplib::Request& req) const {
    return base_url(req, options.scheme, options.fallback_host ? options.fallback_host() : "");
  }
};

bool truthy_param(const httplib::Request& req, const char* name) {
  return req.has_param(name) && util::is_truthy(req.get_param_value(name));
}

Json entry_json(const TreeEntry& e) {
  if (!e.is_file) return {{"type", "directory"}, {"path", e.path}, {"oid", e.oid}};
  Json j = {{"type", "file"}, {"path", e.path}, {"oid", e.oid}, {"size", e.size}};
  if (e.lfs_sha256) {
    j["lfs"] = {{"oid", *e.lfs_sha256},
                {"size", e.size},
                {"pointerSize", lfs_pointer_text(*e.lfs_sha256, e.size).size()}};
  }
  return j;
}

Json refs_json(const std::vector<GitRef>& refs) {
  Json out = Json::array();
  for (const auto& r : refs)
    out.push_back({{"name", r.name}, {"ref", r.ref}, {"targetCommit", r.target_commit}});
  return out;
}

// An unsigned query parameter (0 when absent); nullopt when it is not a number.
std::optional<std::size_t> index_param(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return 0;
  try {
    return static_cast<std::size_t>(std::stoull(req.get_param_value(name)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The repo of a repo route, admitted by the source; nullopt when an error was sent.
std::optional<RepoTarget> admitted(const Table& t, const httplib::Request& req,
                                   httplib::Response& res, const std::string& type) {
  auto repo = trust::RepoId::parse(std::string(req.matches[2]) + "/" + std::string(req.matches[3]));
  if (!repo) {
    t.error(req, res, {ErrorCode::repo_not_found, repo.error().message});
    return std::nullopt;
  }
  RepoTarget target{type, std::move(*repo)};
  if (auto admit = t.source.admit(target, req); !admit) {
    t.error(req, res, admit.error());
    return std::nullopt;
  }
  return target;
}

// A revision with nothing after it (repo info, commits, paths-info).
Result<Located> whole_revision(const Table& t, const trust::RepoId& repo, const std::string& rest) {
  KH_TRY_ASSIGN(auto where, t.source.locate(repo, rest, false));
  if (!where.path.empty()) {
    return fail(ErrorCode::revision_not_found,
                "revision '" + rest + "' not found in " + repo.str());
  }
  return where;
}

void overview(const Table& t, const httplib::Request& req, httplib::Response& res) {
  const std::string org = req.matches[1];
  if (!trust::RepoId::parse(org + "/x")) {
    return t.error(req, res,
                   {ErrorCode::repo_not_found, "organization '" + org + "' does not exist"});
  }
  auto trusted = t.source.trusted_publisher(org);
  if (!trusted) return t.error(req, res, trusted.error());
  http::send_json(
      res,
      {{"name", org}, {"fullname", org}, {"type", "org"}, {"trustedKernelPublisher", *trusted}});
}

void repo_info(const Table& t, const httplib::Request& req, httplib::Response& res,
               const RepoTarget& target, const std::string& revision) {
  auto where = whole_revision(t, target.repo, revision);
  if (!where) return t.error(req, res, where.error());
  Json info = {{"_id", target.repo.str()}, {"id", target.repo.str()}, {"author", target.repo.org},
               {"sha", where->commit},     {"private", false},        {"gated", false},
               {"disabled", false},        {"downloads", 0},          {"likes", 0},
               {"tags", Json::array()}};
  auto summary = t.source.commit(target.repo, where->commit);
  if (!summary) return t.error(req, res, summary.error());
  if (*summary) {
    const std::string when = http::iso_time((*summary)->timestamp);
    info["lastModified"] = when;
    info["createdAt"] = when;
  }
  if (target.type == "models") {  // kernel repos never expose siblings (hub-protocol.md §1.a)
    auto files = t.source.tree(target.repo, where->commit, "", true);
    if (!files) return t.error(req, res, files.error());
    const bool blobs = truthy_param(req, "blobs");
    Json siblings = Json::array();
    for (const auto& f : *files) {
      if (!f.is_file) continue;
      Json s = {{"rfilename", f.path}};
      if (blobs) {
        s["size"] = f.size;
        s["blobId"] = f.oid;
        if (f.lfs_sha256) {
          s["lfs"] = {{"sha256", *f.lfs_sha256},
                      {"size", f.size},
                      {"pointerSize", lfs_pointer_text(*f.lfs_sha256, f.size).size()}};
        }
      }
      siblings.push_back(std::move(s));
    }
    info["siblings"] = std::move(siblings);
  }
  http::send_json(res, info);
}

void refs(const Table& t, const httplib::Request& req, httplib::Response& res,
          const RepoTarget& target) {
  auto refs = t.source.refs(target.repo);
  if (!refs) return t.error(req, res, refs.error());
  Json out = {{"branches", refs_json(refs->branches)},
              {"converts", Json::array()},
              {"tags", refs_json(refs->tags)}};
  if (truthy_param(req, "include_prs")) out["pullRequests"] = Json::array();  // none here
  http::send_json(res, out);
}

void tree(const Table& t, const httplib::Request& req, httplib::Response& res,
          const RepoTarget& target) {
  std::string rest = req.matches[4];
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  auto where = t.source.locate(target.repo, rest, false);
  if (!where) return t.error(req, res, where.error());
  const bool recursive = truthy_param(req, "recursive");
  const bool expand = truthy_param(req, "expand");
  const auto cursor = index_param(req, "cursor");
  if (!cursor) return t.error(req, res, {ErrorCode::invalid_request, "invalid cursor"});
  auto entries = t.source.tree(target.repo, where->commit, where->path, recursive);
  if (!entries) return t.error(req, res, entries.error());

  const std::size_t page = std::max<std::size_t>(1, t.source.page_size());
  const std::size_t begin = std::min(*cursor, entries->size());
  const std::size_t end = begin + std::min(page, entries->size() - begin);
  Json out = Json::array();
  for (std::size_t i = begin; i < end; ++i) out.push_back(entry_json((*entries)[i]));
  if (end < entries->size()) {
    // Next pages are addressed by commit sha, so a branch moving mid-listing cannot mix trees.
    std::string next =
        t.base(req) + "/api/" + target.type + "/" + target.repo.str() + "/tree/" + where->commit;
    if (!where->path.empty()) next += "/" + util::url_encode(where->path, false);
    next += std::string("?recursive=") + (recursive ? "true" : "false") +
            "&expand=" + (expand ? "true" : "false") + "&cursor=" + std::to_string(end);
    res.set_header("Link", "<" + next + ">; rel=\"next\"");
  }
  http::send_json(res, out);
}

// The history of a revision, newest first, as the Hub lists it ({id, title, message, authors,
// date}), paged like trees (Link rel="next", `p` = page).
void commits(const Table& t, const httplib::Request& req, httplib::Response& res,
             const RepoTarget& target) {
  auto head = whole_revision(t, target.repo, req.matches[4]);
  if (!head) return t.error(req, res, head.error());
  const auto page_number = index_param(req, "p");
  if (!page_number || *page_number > kMaxCommitPage)
    return t.error(req, res, {ErrorCode::invalid_request, "invalid page"});
  const std::size_t page = std::max<std::size_t>(1, t.source.page_size());
  const std::size_t begin = *page_number * page;
  Json out = Json::array();
  std::optional<std::string> next = head->commit;
  bool more = false;
  for (std::size_t index = 0; next; ++index) {
    if (index >= begin + page) {
      more = true;
      break;
    }
    auto commit = t.source.commit(target.repo, *next);
    if (!commit) return t.error(req, res, commit.error());
    if (!*commit) {
      return t.error(
          req, res,
          {ErrorCode::invalid_request, "this Hub keeps no commit history of " + target.repo.str()});
    }
    const CommitSummary& c = **commit;
    if (index >= begin) {
      const auto newline = c.message.find('\n');
      out.push_back({{"id", c.id},
                     {"title", c.message.substr(0, newline)},
                     {"message", newline == std::string::npos ? "" : c.message.substr(newline + 1)},
                     {"authors", Json::array({{{"user", "kernelhub"}}})},
                     {"date", http::iso_time(c.timestamp)}});
    }
    next = c.parent;
  }
  if (more) {
    res.set_header("Link", "<" + t.base(req) + "/api/" + target.type + "/" + target.repo.str() +
                               "/commits/" + head->commit +
                               "?p=" + std::to_string(*page_number + 1) + ">; rel=\"next\"");
  }
  http::send_json(res, out);
}

// The paths of a paths-info body: JSON {"paths": [...]} or a form (paths=a&paths=b).
Result<std::vector<std::string>> requested_paths(const httplib::Request& req) {
  std::vector<std::string> paths;
  if (req.get_header_value("Content-Type").find("application/json") == std::string::npos) {
    for (auto [it, last] = req.params.equal_range("paths"); it != last; ++it)
      paths.push_back(it->second);  // httplib parsed the form into params
    return paths;
  }
  auto body = util::parse_bounded_json(req.body, util::kRequestBodyJson);
  if (!body)
    return fail(ErrorCode::invalid_request, "bad paths-info body: " + body.error().message);
  try {
    for (const auto& p : body->at("paths")) paths.push_back(p.get<std::string>());
  } catch (const Json::exception& e) {
    return fail(ErrorCode::invalid_request, std::string("bad paths-info body: ") + e.what());
  }
  return paths;
}

void paths_info(const Table& t, const httplib::Request& req, httplib::Response& res,
                const RepoTarget& target) {
  auto paths = requested_paths(req);
  if (!paths) return t.error(req, res, paths.error());
  auto where = whole_revision(t, target.repo, req.matches[4]);
  if (!where) return t.error(req, res, where.error());
  Json out = Json::array();
  for (const auto& path : *paths) {  // unknown paths are silently omitted, as on the Hub
    auto entry = t.source.find(target.repo, where->commit, path);
    if (!entry) return t.error(req, res, entry.error());
    if (*entry) out.push_back(entry_json(**entry));
  }
  http::send_json(res, out);
}

void resolve(const Table& t, const httplib::Request& req, httplib::Response& res,
             const RepoTarget& target) {
  auto where = t.source.locate(target.repo, req.matches[4], true);
  if (!where) return t.error(req, res, where.error());
  t.source.serve_file(req, res, target, *where);
}

using TablePtr = std::shared_ptr<const Table>;
using RepoAnswer = void (*)(const Table&, const httplib::Request&, httplib::Response&,
                            const RepoTarget&);

// A handler for a repo route: the repo admitted first, then `answer`. `type` fixes the repo
// type (resolve URLs); else it is the route's first group.
httplib::Server::Handler repo_route(TablePtr t, RepoAnswer answer, const char* type = nullptr) {
  return [t = std::move(t), answer, type](const httplib::Request& req, httplib::Response& res) {
    if (auto target = admitted(*t, req, res, type ? type : std::string(req.matches[1])))
      answer(*t, req, res, *target);
  };
}

void repo_info_main(const Table& t, const httplib::Request& req, httplib::Response& res,
                    const RepoTarget& target) {
  repo_info(t, req, res, target, "main");
}

void repo_info_at(const Table& t, const httplib::Request& req, httplib::Response& res,
                  const RepoTarget& target) {
  repo_info(t, req, res, target, req.matches[4]);
}

}  // namespace

std::string base_url(const httplib::Request& req, const std::string& scheme,
                     const std::string& fallback) {
  const std::string host = req.get_header_value("Host");
  const bool sane = !host.empty() && host.size() < 256 &&
                    host.find_first_not_of(
                        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") ==
                        std::string::npos;
  return scheme + (sane ? host : fallback);
}

void send_source_error(RepositorySource& source, const httplib::Request& req,
                       httplib::Response& res, const Error& error) {
  source.on_error(error);
  http::take_ranges(req);
  http::send_hub_error(res, error);
}

void register_hub_routes(httplib::Server& server, RepositorySource& source,
                         HubRoutesOptions options) {
  // Every handler holds the table; it lives as long as the last of them.
  const auto t = std::make_shared<const Table>(Table{source, std::move(options)});
  const std::string api = kRepoApi;
  server.Get(R"(/api/organizations/([^/]+)/overview)",
             [t](const httplib::Request& req, httplib::Response& res) { overview(*t, req, res); });
  server.Get(api, repo_route(t, repo_info_main));
  server.Get(api + "/revision/(.+)", repo_route(t, repo_info_at));
  server.Get(api + "/refs", repo_route(t, refs));
  server.Get(api + "/commits/(.+)", repo_route(t, commits));
  server.Get(api + "/tree/(.+)", repo_route(t, tree));
  server.Post(api + "/paths-info/(.+)", repo_route(t, paths_info));
  // Resolve: /kernels/{org}/{name}/... for kernel repos, /{org}/{name}/... for models; the
  // groups line up with the API's (2, 3: org and name; 4: revision and path). GET handlers
  // also answer HEAD (httplib routes both to the GET table).
  server.Get(R"(/(kernels)/([^/]+)/([^/]+)/resolve/(.+))", repo_route(t, resolve, "kernels"));
  server.Get(R"(/()([^/]+)/([^/]+)/resolve/(.+))", repo_route(t, resolve, "models"));
}

}  // namespace kernelhub::hub::server
