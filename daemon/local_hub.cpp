#include "kernelhub/daemon/local_hub.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <thread>

#include "kernelhub/daemon/cache_source.hpp"
#include "kernelhub/http/guarded_server.hpp"
#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/proto/prometheus.hpp"

namespace kernelhub::daemon {

namespace {

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

}  // namespace

Result<LocalHubOptions> parse_http_listen(const std::string& text) {
  LocalHubOptions out;
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size()) {
    return fail(ErrorCode::invalid_argument,
                "--http wants HOST:PORT on loopback, e.g. 127.0.0.1:8765 (got '" + text + "')");
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const std::string port = text.substr(colon + 1);
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return fail(ErrorCode::invalid_argument, "--http: '" + port + "' is not a port number");
  }
  if (!is_loopback(host)) {
    return fail(ErrorCode::invalid_argument,
                "--http serves loopback only (127.0.0.1, ::1 or localhost), not '" + host +
                    "': over HTTP there is no peer credential, so the listener must not leave "
                    "the host; put a site cache (deploy/nginx) in front for other hosts");
  }
  out.host = host;
  out.port = std::stoi(port);
  return out;
}

struct LocalHub::Impl {
  Impl(LocalHubOptions o, FetchService& service, AtomicCounters& counters, StatusSource status)
      : options(std::move(o)),
        metadata(options.env, options.resolve_ttl, counters),
        source(service, metadata, counters),
        status(std::move(status)),
        counters(counters),
        server(options.limits) {}
  LocalHubOptions options;
  UpstreamMetadata metadata;
  CacheSource source;
  StatusSource status;
  AtomicCounters& counters;
  http::GuardedServer server;
  std::thread thread;
  int port = 0;
};

LocalHub::LocalHub(LocalHubOptions options, FetchService& service, AtomicCounters& counters,
                   StatusSource status)
    : impl_(std::make_unique<Impl>(std::move(options), service, counters, std::move(status))) {}

LocalHub::~LocalHub() { stop(); }

Result<void> LocalHub::start() {
  Impl& d = *impl_;
  d.server.set_pre_routing_handler([&d](const httplib::Request&, httplib::Response&) {
    d.counters.http_requests.fetch_add(1, std::memory_order_relaxed);
    return httplib::Server::HandlerResponse::Unhandled;
  });
  d.server.Get("/metrics", [&d](const httplib::Request&, httplib::Response& res) {
    res.set_content(proto::render_prometheus(d.status()), proto::kPrometheusContentType);
  });
  d.source.register_on(d.server);
  // The gate checks the address it bound, not the name it was given.
  auto port = d.server.bind(d.options.host, d.options.port, /*loopback_only=*/true);
  if (!port) return fail(port.error().code, "--http: " + port.error().message);
  d.port = *port;
  d.thread = std::thread([&d] {
    if (auto served = d.server.serve(); !served)
      spdlog::error("local Hub: {}", served.error().message);
  });
  const std::string ip = d.server.bound_ip();
  spdlog::info("local Hub for Python clients on http://{}:{} (HF_ENDPOINT); metrics at /metrics",
               ip.find(':') != std::string::npos ? "[" + ip + "]" : ip, d.port);
  return ok();
}

void LocalHub::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->server.shutdown();
  impl_->thread.join();
}

int LocalHub::port() const { return impl_->port; }

}  // namespace kernelhub::daemon
