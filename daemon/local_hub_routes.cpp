#include "kernelhub/daemon/local_hub_routes.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/hub/server/local_store.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/revision.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/environment.hpp"

namespace kernelhub::daemon {

namespace {

using http::send_error;
using http::send_json;

constexpr const char* kRepoApi = R"(/api/(kernels|models)/([^/]+)/([^/]+))";
// Files outside build/<variant>/ (kernel-status.toml, README.md) are passed on when small.
constexpr std::size_t kMaxSmallFile = std::size_t{1024} * 1024;
constexpr std::size_t kChunk = std::size_t{256} * 1024;

constexpr const char* kHttpTrustNote =
    " (kernelhubd's local Hub sees no client environment and no peer credential: its admin "
    "policy alone decides trust over HTTP, so trust_remote_code and "
    "DIFFUSERS_TRUST_REMOTE_KERNELS do not count here; ask the admin to add the publisher to "
    "[trust] publishers, or fetch over the Unix socket with `kernelhub download`, where your "
    "opt-in applies)";

class Handler {
 public:
  Handler(RoutesContext& ctx, const httplib::Request& req, httplib::Response& res)
      : ctx_(ctx), req_(req), res_(res) {}

  // The repo of the route, if the admin policy lets anyone fetch from its publisher.
  std::optional<trust::RepoId> trusted_repo(const std::string& org, const std::string& name) {
    auto repo = trust::RepoId::parse(org + "/" + name);
    if (!repo) {
      reply_error({ErrorCode::repo_not_found, repo.error().message});
      return std::nullopt;
    }
    const auto decision = trust::decide_trust(*ctx_.service.policy(), repo->org, {});
    if (!decision.allowed) {
      ctx_.counters.trust_refused.fetch_add(1, std::memory_order_relaxed);
      // decide_trust's own text points at the client's variables, which cannot reach us.
      const std::string why = decision.code == ErrorCode::untrusted_publisher
                                  ? "publisher '" + repo->org +
                                        "' is not trusted by this host's kernelhubd" +
                                        kHttpTrustNote
                                  : decision.reason;
      spdlog::warn("refused {} for http {}: {}", repo->str(), req_.remote_addr, why);
      reply_error({decision.code, why});
      return std::nullopt;
    }
    return *repo;
  }

  // The route's revision and path, checked before anything is asked upstream: a '.' or '..'
  // segment (cpp-httplib has decoded %2e and %2F already), a control character or an encoded
  // separator is refused here with a 400 that echoes the request only. HubApi checks them
  // again where it builds the URL (hub/api_url.cpp).
  bool checked(const std::string& revision, const std::string* path = nullptr) {
    if (auto rev = trust::validate_revision(revision); !rev) {
      reply_error({ErrorCode::invalid_request,
                   rev.error().message + " (kernelhubd's local Hub passes on branch, tag and "
                                         "commit names only)"});
      return false;
    }
    if (path == nullptr || path->empty()) return true;
    if (auto safe = trust::validate_repo_path(*path); !safe) {
      // The client's path, not the Hub's listing: a bad request (400), not unsafe_path (the
      // integrity error a hostile listing gets, 502).
      reply_error({ErrorCode::invalid_request, safe.error().message});
      return false;
    }
    return true;
  }

  void reply_error(const Error& error) {
    ctx_.counters.count_error(error.code);
    http::send_hub_error(res_, error);
  }

  void overview(const std::string& org) {
    if (!trust::RepoId::parse(org + "/x")) {
      return reply_error({ErrorCode::repo_not_found, "organization '" + org + "' does not exist"});
    }
    const auto decision = trust::decide_trust(*ctx_.service.policy(), org, {});
    send_json(res_, {{"name", org},
                     {"fullname", org},
                     {"type", "org"},
                     {"trustedKernelPublisher", decision.allowed}});
  }

  void refs(const trust::RepoId& repo) {
    auto refs = ctx_.metadata.refs(repo);
    if (!refs) return reply_error(refs.error());
    const auto list = [](const std::vector<hub::GitRef>& refs) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : refs)
        out.push_back({{"name", r.name}, {"ref", r.ref}, {"targetCommit", r.target_commit}});
      return out;
    };
    nlohmann::json out = {{"branches", list(refs->branches)},
                          {"converts", nlohmann::json::array()},
                          {"tags", list(refs->tags)}};
    if (req_.has_param("include_prs")) out["pullRequests"] = nlohmann::json::array();
    send_json(res_, out);
  }

  void revision(const trust::RepoId& repo, const std::string& revision) {
    auto commit = ctx_.metadata.commit_of(repo, revision);
    if (!commit) return reply_error(commit.error());
    send_json(res_, {{"_id", repo.str()},
                     {"id", repo.str()},
                     {"author", repo.org},
                     {"sha", *commit},
                     {"private", false},
                     {"gated", false},
                     {"disabled", false},
                     {"tags", nlohmann::json::array()}});
  }

  void tree(const trust::RepoId& repo, const std::string& revision, const std::string& path) {
    auto commit = ctx_.metadata.commit_of(repo, revision);
    if (!commit) return reply_error(commit.error());
    const bool recursive =
        req_.has_param("recursive") && util::is_truthy(req_.get_param_value("recursive"));
    auto entries = ctx_.metadata.tree(repo, *commit, path, recursive);
    if (!entries) return reply_error(entries.error());
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : *entries) out.push_back(entry_json(e));
    send_json(res_, out);  // one page: the listing is already bounded upstream-side
  }

  // HEAD answers from the listing; GET of build/<variant>/... from the verified cache,
  // through the daemon's single-flight fetch; other small files are passed on, checked.
  void resolve(const trust::RepoId& repo, const std::string& revision, const std::string& path) {
    http::take_ranges(req_);  // whole files only (200): clients restart, not resume
    auto commit = ctx_.metadata.commit_of(repo, revision);
    if (!commit) return reply_error(commit.error());
    auto entry = ctx_.metadata.file_entry(repo, *commit, path);
    if (!entry) return reply_error(entry.error());
    res_.set_header("X-Repo-Commit", *commit);
    res_.set_header("ETag", "\"" + entry->etag() + "\"");
    if (entry->is_lfs()) {
      res_.set_header("X-Linked-Etag", "\"" + entry->etag() + "\"");
      res_.set_header("X-Linked-Size", std::to_string(entry->size));
    }
    if (req_.method == "HEAD") return head_only(entry->size);
    const auto variant = variant_of(path);
    if (variant) return serve_variant_file(repo, *commit, *variant, *entry);
    serve_small_file(repo, *commit, *entry);
  }

 private:
  static nlohmann::json entry_json(const hub::TreeEntry& e) {
    if (!e.is_file) return {{"type", "directory"}, {"path", e.path}, {"oid", e.oid}};
    nlohmann::json j = {{"type", "file"}, {"path", e.path}, {"oid", e.oid}, {"size", e.size}};
    if (e.lfs_sha256) {
      const hub::server::StoredFile pointer{e.size, *e.lfs_sha256, "", true};
      j["lfs"] = {{"oid", *e.lfs_sha256},
                  {"size", e.size},
                  {"pointerSize", hub::server::lfs_pointer_text(pointer).size()}};
    }
    return j;
  }

  // "build/<variant>/<file...>" -> variant.
  static std::optional<std::string> variant_of(const std::string& path) {
    constexpr std::string_view kPrefix = "build/";
    if (path.rfind(kPrefix, 0) != 0) return std::nullopt;
    const auto end = path.find('/', kPrefix.size());
    if (end == std::string::npos || end == kPrefix.size()) return std::nullopt;
    return path.substr(kPrefix.size(), end - kPrefix.size());
  }

  void head_only(std::uint64_t size) {
    res_.set_content_provider(size, "application/octet-stream",
                              [](std::size_t, std::size_t, httplib::DataSink&) { return false; });
  }

  void serve_variant_file(const trust::RepoId& repo, const std::string& commit,
                          const std::string& variant, const hub::TreeEntry& entry) {
    proto::FetchRequest request;
    request.repo = repo.str();
    request.revision = commit;
    request.variant = variant;
    auto out = ctx_.service.fetch(request, /*with_fds=*/true, {}, "http " + req_.remote_addr);
    if (!out) return reply_error(out.error());
    for (std::size_t i = 0; i < out->reply.files.size(); ++i) {
      const auto& file = out->reply.files[i];
      if (file.path != entry.path || !file.fd) continue;
      auto fd = std::make_shared<UniqueFd>(std::move(out->fds.at(*file.fd)));
      res_.set_content_provider(
          file.size, "application/octet-stream",
          [fd](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
            std::string buffer(std::min(length, kChunk), '\0');
            const auto n =
                ::pread(fd->get(), buffer.data(), buffer.size(), static_cast<off_t>(offset));
            if (n <= 0) return false;  // the connection is closed: never a short 200
            return sink.write(buffer.data(), static_cast<std::size_t>(n));
          });
      return;
    }
    reply_error({ErrorCode::entry_not_found,
                 entry.path + " is not part of the variant " + variant + " kernelhubd fetched"});
  }

  void serve_small_file(const trust::RepoId& repo, const std::string& commit,
                        const hub::TreeEntry& entry) {
    if (entry.is_lfs() || entry.size > kMaxSmallFile) {
      return reply_error({ErrorCode::invalid_request,
                          "kernelhubd's local Hub serves the files of build/<variant>/ and small "
                          "files (up to 1 MiB) only; " +
                              entry.path + " is neither"});
    }
    auto body = ctx_.metadata.small_file(repo, commit, entry.path, kMaxSmallFile);
    if (!body) return reply_error(body.error());
    if (!*body) {
      return reply_error(
          {ErrorCode::entry_not_found, entry.path + " does not exist in " + repo.str()});
    }
    if (trust::git_blob_sha1_hex(**body) != entry.oid) {
      return reply_error({ErrorCode::hash_mismatch,
                          entry.path + ": the upstream bytes do not match the listing's git oid " +
                              entry.oid + "; nothing served"});
    }
    res_.set_content(**body, "application/octet-stream");
  }

  RoutesContext& ctx_;
  const httplib::Request& req_;
  httplib::Response& res_;
};

}  // namespace

void LocalHubRoutes::register_on(httplib::Server& server) {
  const std::string api = kRepoApi;
  auto* ctx = &ctx_;
  server.Get(R"(/api/organizations/([^/]+)/overview)",
             [ctx](const httplib::Request& req, httplib::Response& res) {
               Handler(*ctx, req, res).overview(req.matches[1]);
             });
  // Every repo route: the publisher first, then the answer.
  const auto repo_route = [ctx](auto answer) {
    return [ctx, answer](const httplib::Request& req, httplib::Response& res) {
      Handler handler(*ctx, req, res);
      if (auto repo = handler.trusted_repo(req.matches[2], req.matches[3]))
        answer(handler, *repo, req);
    };
  };
  server.Get(api, repo_route([](Handler& h, const trust::RepoId& repo, const httplib::Request&) {
               h.revision(repo, "main");
             }));
  server.Get(api + "/revision/([^/]+)",
             repo_route([](Handler& h, const trust::RepoId& repo, const httplib::Request& req) {
               if (h.checked(req.matches[4])) h.revision(repo, req.matches[4]);
             }));
  server.Get(api + "/refs", repo_route([](Handler& h, const trust::RepoId& repo,
                                          const httplib::Request&) { h.refs(repo); }));
  server.Get(api + "/tree/([^/]+)(?:/(.*))?",
             repo_route([](Handler& h, const trust::RepoId& repo, const httplib::Request& req) {
               std::string path = req.matches[5];
               while (!path.empty() && path.back() == '/') path.pop_back();
               if (h.checked(req.matches[4], &path)) h.tree(repo, req.matches[4], path);
             }));
  // Resolve: /kernels/{org}/{name}/... for kernel repos, /{org}/{name}/... for models. The
  // regex groups are shifted so that 2 and 3 are always org and name.
  const auto resolve =
      repo_route([](Handler& h, const trust::RepoId& repo, const httplib::Request& req) {
        const std::string path = req.matches[5];
        if (h.checked(req.matches[4], &path)) h.resolve(repo, req.matches[4], path);
      });
  server.Get(R"(/(kernels)/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))", resolve);
  server.Get(R"(/()([^/]+)/([^/]+)/resolve/([^/]+)/(.+))", resolve);
  http::register_error_handler(server);
}

}  // namespace kernelhub::daemon
