// A Hub-API server over a local store of kernel repos (see local_store.hpp): what
// `kernelhub serve` runs, and what tests start in-process on loopback. It speaks the
// subset of the Hub protocol that huggingface_hub, `kernels` and our client use
// (research/hub-protocol.md §1.f), under both /api/kernels/... and /api/models/...
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "kernelhub/hub/server/serve_hooks.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub::server {

struct ServerOptions {
  std::filesystem::path root;  // the local store
  std::string bind_host = "127.0.0.1";
  int port = 0;                       // 0: pick a free port
  std::size_t tree_page_size = 1000;  // entries per /tree page before a Link: rel="next"
  // PEM certificate chain and private key: serve HTTPS instead of HTTP (both or neither).
  std::filesystem::path tls_cert;
  std::filesystem::path tls_key;
  // Orgs whose /api/organizations/{org}/overview says trustedKernelPublisher (the flag the
  // `kernels` library checks online before it downloads anything).
  std::set<std::string> trusted_publishers{"kernels-community"};
  // Seams around the routes (serve_hooks.hpp); none in the product.
  std::shared_ptr<ServeHooks> hooks;
};

class HubServer {
 public:
  explicit HubServer(ServerOptions options);
  ~HubServer();  // stops the server
  HubServer(const HubServer&) = delete;
  HubServer& operator=(const HubServer&) = delete;

  // Binds and starts serving on a background thread.
  Result<void> start();
  // Blocks serving on the calling thread (the CLI's `serve`); returns when stop() is called.
  Result<void> run();
  void stop();

  int port() const;
  std::string endpoint() const;  // "http://127.0.0.1:PORT" ("https://" with TLS)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kernelhub::hub::server
