// HubServer lifecycle, the hooks around routing and the error fallback. Repo routes live in
// api_routes.cpp and file_routes.cpp.
#include "kernelhub/hub/server/hub_server.hpp"

#include <spdlog/spdlog.h>

#include <thread>

#include "kernelhub/http/guarded_server.hpp"
#include "kernelhub/hub/server/server_context.hpp"
#include "kernelhub/util/json_bounds.hpp"

namespace kernelhub::hub::server {
namespace {

constexpr std::size_t kWorkerThreads = 32;

// Plain HTTP goes through the gate (guarded_server.hpp); HTTPS (tests of TLS clients) is
// httplib's own SSLServer, which the gate cannot front.
std::unique_ptr<httplib::Server> make_server(const ServerOptions& options) {
  if (options.tls_cert.empty() && options.tls_key.empty()) {
    http::HttpListenerLimits limits;
    limits.head.max_body_bytes = util::kRequestBodyJson.max_bytes;  // paths-info and hooks' JSON
    limits.workers = kWorkerThreads;
    return std::make_unique<http::GuardedServer>(limits);
  }
  return std::make_unique<httplib::SSLServer>(options.tls_cert.c_str(), options.tls_key.c_str());
}

}  // namespace

struct HubServer::Impl {
  explicit Impl(ServerOptions options)
      : ctx(std::move(options)),
        owned(make_server(ctx.options)),
        server(*owned),
        guarded(dynamic_cast<http::GuardedServer*>(owned.get())) {}
  ServerContext ctx;
  std::unique_ptr<httplib::Server> owned;  // an SSLServer when a certificate is given
  httplib::Server& server;
  http::GuardedServer* guarded;  // `owned`, unless it is the SSLServer
  std::thread thread;
  std::atomic<bool> in_listen{false};
  std::atomic<bool> listen_done{false};
  bool bound = false;

  Result<void> bind() {
    if (bound) return fail(ErrorCode::internal, "server already started");
    if (!server.is_valid()) {
      return fail(ErrorCode::invalid_argument, "cannot use the TLS certificate " +
                                                   ctx.options.tls_cert.string() + " and key " +
                                                   ctx.options.tls_key.string());
    }
    if (!guarded) {
      server.new_task_queue = [] { return new httplib::ThreadPool(kWorkerThreads); };
      server.set_keep_alive_max_count(10000);
      // Request bodies (paths-info) are small JSON or forms: refuse more (413).
      server.set_payload_max_length(util::kRequestBodyJson.max_bytes);
      server.set_keep_alive_timeout(2);  // bounds how long stop() waits for idle keep-alive peers
    }
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return ctx.hooks->before_route(req, res) ? httplib::Server::HandlerResponse::Handled
                                               : httplib::Server::HandlerResponse::Unhandled;
    });
    http::register_error_handler(server);
    // Runs before the status line is written: what a hook changes still goes out.
    server.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      ctx.hooks->after_route(req, res);
    });
    ctx.hooks->add_routes(server);
    register_store_routes(server, ctx);

    if (guarded) {
      KH_TRY_ASSIGN(ctx.port, guarded->bind(ctx.options.bind_host, ctx.options.port));
    } else {
      const int port =
          ctx.options.port == 0
              ? server.bind_to_any_port(ctx.options.bind_host)
              : (server.bind_to_port(ctx.options.bind_host, ctx.options.port) ? ctx.options.port
                                                                              : -1);
      if (port <= 0) {
        return fail(ErrorCode::network, "cannot bind " + ctx.options.bind_host + ":" +
                                            std::to_string(ctx.options.port));
      }
      ctx.port = port;
    }
    bound = true;
    spdlog::debug("serving {} on {}", ctx.options.root.string(), ctx.base_url(httplib::Request{}));
    return ok();
  }

  void listen() {
    // Dekker-style with stop(): either stop() sees in_listen, or we see stopping.
    in_listen = true;
    if (guarded) {
      if (auto served = guarded->serve(); !served) spdlog::error("{}", served.error().message);
    } else if (!ctx.stopping) {
      server.listen_after_bind();
    }
    in_listen = false;
    listen_done = true;
  }
};

HubServer::HubServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HubServer::~HubServer() { stop(); }

Result<void> HubServer::start() {
  KH_TRY(impl_->bind());
  impl_->thread = std::thread([this] { impl_->listen(); });
  // Return once httplib's accept loop runs, so a stop() right after start() is not missed
  // (the gate's shutdown() is never missed).
  if (!impl_->guarded) {
    while (!impl_->server.is_running() && !impl_->listen_done) std::this_thread::yield();
  }
  return ok();
}

Result<void> HubServer::run() {
  KH_TRY(impl_->bind());
  impl_->listen();
  return ok();
}

void HubServer::stop() {
  impl_->ctx.stopping = true;
  impl_->ctx.hooks->stopping();
  if (impl_->guarded) {
    impl_->guarded->shutdown();
  } else {
    // A listen that has not started its accept loop yet would miss stop(): wait for it.
    while (impl_->in_listen && !impl_->server.is_running()) std::this_thread::yield();
    impl_->server.stop();
  }
  if (impl_->thread.joinable()) impl_->thread.join();
}

int HubServer::port() const { return impl_->ctx.port; }

std::string HubServer::endpoint() const {
  return impl_->ctx.scheme() + impl_->ctx.options.bind_host + ":" + std::to_string(impl_->ctx.port);
}

}  // namespace kernelhub::hub::server
