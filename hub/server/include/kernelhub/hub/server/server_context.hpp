// State shared by the HubServer core, its store source and the store's file routes, and how
// to register those routes on a server (HubServer does; the serve fuzzer drives them without
// a socket).
#pragma once

#include <httplib.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/hub/server/hub_server.hpp"
#include "kernelhub/hub/server/local_store.hpp"
#include "kernelhub/hub/server/repository_source.hpp"

namespace kernelhub::hub::server {

struct ServerContext {
  explicit ServerContext(ServerOptions opts);
  ~ServerContext();
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  ServerOptions options;
  LocalStore store;
  std::shared_ptr<ServeHooks> hooks;         // never null: the defaults do nothing
  std::unique_ptr<RepositorySource> source;  // the store, as the Hub-API routes see it
  int port = 0;
  std::atomic<bool> stopping{false};

  // "https://" when serving TLS, else "http://".
  std::string scheme() const {
    return options.tls_cert.empty() && options.tls_key.empty() ? "http://" : "https://";
  }
  // "http://host:port" as the client addressed us (Host header), for Location and Link.
  std::string base_url(const httplib::Request& req) const;
};

// Splits "<rev>/<path>" where rev itself may contain '/': the longest prefix that
// resolves wins. need_path: the path part must be non-empty (resolve URLs).
Result<Located> split_revision(const LocalStore& store, const trust::RepoId& repo,
                               const std::string& rest, bool need_path);

// The Hub API over the store (repository_source.hpp) and the LFS object URL of its files.
void register_store_routes(httplib::Server& server, ServerContext& ctx);

}  // namespace kernelhub::hub::server
