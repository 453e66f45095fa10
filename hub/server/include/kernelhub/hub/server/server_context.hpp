// Private to kh_hub_server: state shared by the HubServer core and its route handlers,
// plus the small response helpers every route uses.
#pragma once

#include <httplib.h>

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/hub/server/hub_server.hpp"
#include "kernelhub/hub/server/local_store.hpp"

namespace kernelhub::hub::server {

struct ServerContext {
  explicit ServerContext(ServerOptions opts)
      : options(std::move(opts)),
        store(options.root),
        hooks(options.hooks ? options.hooks : std::make_shared<ServeHooks>()) {}
  ServerOptions options;
  LocalStore store;
  std::shared_ptr<ServeHooks> hooks;  // never null: the defaults do nothing
  int port = 0;
  std::atomic<bool> stopping{false};

  // "https://" when serving TLS, else "http://".
  std::string scheme() const {
    return options.tls_cert.empty() && options.tls_key.empty() ? "http://" : "https://";
  }
  // "http://host:port" as the client addressed us (Host header), for Location and Link.
  std::string base_url(const httplib::Request& req) const;
};

// A repo route's target: "kernels" or "models", and the repo id.
struct RepoTarget {
  std::string type;
  trust::RepoId repo;
};
std::optional<RepoTarget> repo_target(httplib::Response& res, const std::string& type,
                                      const std::string& org, const std::string& name);

// Splits "<rev>/<path>" where rev itself may contain '/': the longest prefix that
// resolves wins. need_path: the path part must be non-empty (resolve URLs).
struct RevisionAndPath {
  std::string revision;
  std::string commit;
  std::string path;
};
Result<RevisionAndPath> split_revision(const LocalStore& store, const trust::RepoId& repo,
                                       const std::string& rest, bool need_path);

void register_api_routes(httplib::Server& server, ServerContext& ctx);
void register_file_routes(httplib::Server& server, ServerContext& ctx);

}  // namespace kernelhub::hub::server
