// /api/{kernels,models}/{org}/{name}/...: repo info, refs, commit history, tree listing,
// paths-info
// (research/hub-protocol.md §1.a-1.c for the JSON shapes clients rely on).
#include <algorithm>
#include <optional>

#include "kernelhub/hub/server/server_context.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::hub::server {
namespace {

constexpr const char* kRepoApi = R"(/api/(kernels|models)/([^/]+)/([^/]+))";

nlohmann::json entry_json(const TreeEntry& entry) {
  if (!entry.file)
    return {{"type", "directory"}, {"path", entry.path}, {"oid", entry.directory_oid}};
  const StoredFile& f = *entry.file;
  nlohmann::json j = {{"type", "file"}, {"path", entry.path}, {"size", f.size}};
  if (f.lfs) {
    j["oid"] = lfs_pointer_oid(f);  // the Hub's tree oid of an LFS file is its pointer's blob id
    j["lfs"] = {{"oid", f.sha256}, {"size", f.size}, {"pointerSize", lfs_pointer_text(f).size()}};
  } else {
    j["oid"] = f.git_oid;
  }
  return j;
}

nlohmann::json refs_json(const std::vector<RefEntry>& refs, const char* prefix) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : refs)
    out.push_back({{"name", r.name}, {"ref", prefix + r.name}, {"targetCommit", r.commit}});
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

void repo_info(const ServerContext& ctx, const httplib::Request& req, httplib::Response& res,
               const std::string& revision) {
  auto target = repo_target(res, req.matches[1], req.matches[2], req.matches[3]);
  if (!target) return;
  auto sha = ctx.store.resolve(target->repo, revision);
  if (!sha) return http::send_hub_error(res, sha.error());
  auto commit = ctx.store.read_commit(target->repo, *sha);
  if (!commit) return http::send_hub_error(res, commit.error());
  const std::string when = http::iso_time(commit->timestamp);
  nlohmann::json info = {{"_id", target->repo.str()},
                         {"id", target->repo.str()},
                         {"author", target->repo.org},
                         {"sha", *sha},
                         {"private", false},
                         {"gated", false},
                         {"disabled", false},
                         {"downloads", 0},
                         {"likes", 0},
                         {"tags", nlohmann::json::array()},
                         {"lastModified", when},
                         {"createdAt", when}};
  if (target->type == "models") {  // kernel repos never expose siblings (hub-protocol.md §1.a)
    const bool blobs = req.has_param("blobs") && util::is_truthy(req.get_param_value("blobs"));
    nlohmann::json siblings = nlohmann::json::array();
    for (const auto& [path, f] : commit->files) {
      nlohmann::json s = {{"rfilename", path}};
      if (blobs) {
        s["size"] = f.size;
        s["blobId"] = f.lfs ? lfs_pointer_oid(f) : f.git_oid;
        if (f.lfs)
          s["lfs"] = {
              {"sha256", f.sha256}, {"size", f.size}, {"pointerSize", lfs_pointer_text(f).size()}};
      }
      siblings.push_back(std::move(s));
    }
    info["siblings"] = std::move(siblings);
  }
  http::send_json(res, info);
}

void tree(const ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto target = repo_target(res, req.matches[1], req.matches[2], req.matches[3]);
  if (!target) return;
  auto where = split_revision(ctx.store, target->repo, req.matches[4], false);
  if (!where) return http::send_hub_error(res, where.error());
  auto commit = ctx.store.read_commit(target->repo, where->commit);
  if (!commit) return http::send_hub_error(res, commit.error());
  const bool recursive =
      req.has_param("recursive") && util::is_truthy(req.get_param_value("recursive"));
  const bool expand = req.has_param("expand") && util::is_truthy(req.get_param_value("expand"));
  auto entries = list_tree(*commit, where->path, recursive);
  if (!entries) return http::send_hub_error(res, entries.error());

  const auto cursor = index_param(req, "cursor");
  if (!cursor) return http::send_error(res, 400, "BadRequest", "invalid cursor");
  const std::size_t page = std::max<std::size_t>(1, ctx.options.tree_page_size);
  const std::size_t begin = std::min(*cursor, entries->size());
  const std::size_t end = std::min(begin + page, entries->size());
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = begin; i < end; ++i) out.push_back(entry_json((*entries)[i]));
  if (end < entries->size()) {
    // Next pages are addressed by commit sha, so a branch moving mid-listing cannot mix trees.
    std::string next = ctx.base_url(req) + "/api/" + target->type + "/" + target->repo.str() +
                       "/tree/" + where->commit;
    if (!where->path.empty()) next += "/" + util::url_encode(where->path, false);
    next += std::string("?recursive=") + (recursive ? "true" : "false") +
            "&expand=" + (expand ? "true" : "false") + "&cursor=" + std::to_string(end);
    res.set_header("Link", "<" + next + ">; rel=\"next\"");
  }
  http::send_json(res, out);
}

// GET .../commits/{revision}: the history of a revision, newest first, as the Hub lists it
// ({id, title, message, authors, date}), paged like trees (Link rel="next", `p` = page).
void commits(const ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto target = repo_target(res, req.matches[1], req.matches[2], req.matches[3]);
  if (!target) return;
  auto head = ctx.store.resolve(target->repo, std::string(req.matches[4]));
  if (!head) return http::send_hub_error(res, head.error());
  const auto page_number = index_param(req, "p");
  if (!page_number || *page_number > 1'000'000) {
    return http::send_error(res, 400, "BadRequest", "invalid page");
  }
  const std::size_t page = std::max<std::size_t>(1, ctx.options.tree_page_size);
  const std::size_t begin = *page_number * page;
  nlohmann::json out = nlohmann::json::array();
  std::optional<std::string> next = *head;
  bool more = false;
  for (std::size_t index = 0; next; ++index) {
    if (index >= begin + page) {
      more = true;
      break;
    }
    auto commit = ctx.store.read_commit(target->repo, *next);
    if (!commit) return http::send_hub_error(res, commit.error());
    if (index >= begin) {
      const auto newline = commit->message.find('\n');
      out.push_back(
          {{"id", commit->id},
           {"title", commit->message.substr(0, newline)},
           {"message", newline == std::string::npos ? "" : commit->message.substr(newline + 1)},
           {"authors", nlohmann::json::array({{{"user", "kernelhub"}}})},
           {"date", http::iso_time(commit->timestamp)}});
    }
    next = commit->parent;
  }
  if (more) {
    res.set_header("Link", "<" + ctx.base_url(req) + "/api/" + target->type + "/" +
                               target->repo.str() + "/commits/" + *head +
                               "?p=" + std::to_string(*page_number + 1) + ">; rel=\"next\"");
  }
  http::send_json(res, out);
}

void paths_info(const ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto target = repo_target(res, req.matches[1], req.matches[2], req.matches[3]);
  if (!target) return;
  std::vector<std::string> paths;
  if (req.get_header_value("Content-Type").find("application/json") != std::string::npos) {
    auto body = util::parse_bounded_json(req.body, util::kRequestBodyJson);
    if (!body)
      return http::send_error(res, 400, "BadRequest",
                              "bad paths-info body: " + body.error().message);
    try {
      for (const auto& p : body->at("paths")) paths.push_back(p.get<std::string>());
    } catch (const nlohmann::json::exception& e) {
      return http::send_error(res, 400, "BadRequest",
                              std::string("bad paths-info body: ") + e.what());
    }
  } else {  // form body: httplib already parsed it into params (paths=a&paths=b)
    for (auto [it, last] = req.params.equal_range("paths"); it != last; ++it)
      paths.push_back(it->second);
  }
  auto sha = ctx.store.resolve(target->repo, std::string(req.matches[4]));
  if (!sha) return http::send_hub_error(res, sha.error());
  auto commit = ctx.store.read_commit(target->repo, *sha);
  if (!commit) return http::send_hub_error(res, commit.error());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& path : paths) {  // unknown paths are silently omitted, as on the Hub
    if (auto entry = find_entry(*commit, path)) out.push_back(entry_json(*entry));
  }
  http::send_json(res, out);
}

}  // namespace

void register_api_routes(httplib::Server& server, ServerContext& ctx) {
  const std::string base = kRepoApi;
  // An org exists when the store holds a folder for it; trust comes from the options.
  server.Get(R"(/api/organizations/([^/]+)/overview)", [&ctx](const httplib::Request& req,
                                                              httplib::Response& res) {
    const std::string org = req.matches[1];
    if (!trust::RepoId::parse(org + "/x") ||
        !std::filesystem::is_directory(ctx.store.root() / org)) {
      return http::send_error(res, 404, "RepoNotFound",
                              "organization '" + org + "' does not exist");
    }
    http::send_json(res,
                    {{"name", org},
                     {"fullname", org},
                     {"type", "org"},
                     {"trustedKernelPublisher", ctx.options.trusted_publishers.count(org) > 0}});
  });
  server.Get(base, [&ctx](const httplib::Request& req, httplib::Response& res) {
    repo_info(ctx, req, res, "main");
  });
  server.Get(base + "/revision/(.+)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    repo_info(ctx, req, res, req.matches[4]);
  });
  server.Get(base + "/refs", [&ctx](const httplib::Request& req, httplib::Response& res) {
    auto target = repo_target(res, req.matches[1], req.matches[2], req.matches[3]);
    if (!target) return;
    auto refs = ctx.store.list_refs(target->repo);
    if (!refs) return http::send_hub_error(res, refs.error());
    nlohmann::json out = {{"branches", refs_json(refs->branches, "refs/heads/")},
                          {"converts", nlohmann::json::array()},
                          {"tags", refs_json(refs->tags, "refs/tags/")}};
    if (req.has_param("include_prs") && util::is_truthy(req.get_param_value("include_prs"))) {
      out["pullRequests"] = nlohmann::json::array();  // a local store has no pull requests
    }
    http::send_json(res, out);
  });
  server.Get(base + "/commits/(.+)", [&ctx](const httplib::Request& req, httplib::Response& res) {
    commits(ctx, req, res);
  });
  server.Get(base + "/tree/(.+)",
             [&ctx](const httplib::Request& req, httplib::Response& res) { tree(ctx, req, res); });
  server.Post(
      base + "/paths-info/(.+)",
      [&ctx](const httplib::Request& req, httplib::Response& res) { paths_info(ctx, req, res); });
}

}  // namespace kernelhub::hub::server
