#include "daemon_flags.hpp"

#include <chrono>

namespace kernelhub::daemon {

DaemonFlags::DaemonFlags(CLI::App& app, DaemonOptions& options)
    : options_(options),
      resolve_ttl_s_(options.resolve_ttl.count()),
      header_timeout_s_(
          std::chrono::duration_cast<std::chrono::seconds>(options.http_limits.header_timeout)
              .count()) {
  app.add_option("--socket", options_.socket_path,
                 "Unix socket to listen on (unless systemd passes one)");
  app.add_option("--cache-dir", options_.cache_dir, "the daemon's own kernel cache");
  app.add_option("--policy", policy_, "admin policy file (TOML; reloaded on SIGHUP)");
  add_limit_flags(app);
  app.add_option("--resolve-ttl", resolve_ttl_s_,
                 "seconds a version/revision -> commit answer is reused")
      ->check(CLI::Range(0, 86400));
  app.add_flag("!--no-record-usage", options_.record_usage,
               "keep no last-use times (eviction then goes by publish time; for benchmarks)");
  add_http_flags(app);
}

void DaemonFlags::add_limit_flags(CLI::App& app) {
  auto& limits = options_.limit_flags;
  const auto& d = options_.limits;
  app.add_option("--max-connections", limits.max_connections,
                 "clients served at once, all users together (default " +
                     std::to_string(d.max_connections) + ")")
      ->check(CLI::Range(1, 65536));
  app.add_option("--max-connections-per-uid", limits.max_connections_per_uid,
                 "connections one uid may hold at once; root is exempt (default " +
                     std::to_string(d.max_connections_per_uid) + ")")
      ->check(CLI::Range(1, 65536));
  app.add_option("--idle-timeout", limits.idle_timeout_s,
                 "seconds a connection may wait between requests before it is closed (default " +
                     std::to_string(d.idle_timeout.count()) + ")")
      ->check(CLI::Range(1, 86400));
  app.add_option("--frame-timeout", limits.frame_timeout_s,
                 "seconds for hello, and for a request once its first byte is in, to arrive "
                 "whole (default " +
                     std::to_string(d.frame_timeout.count()) + ")")
      ->check(CLI::Range(1, 3600));
  app.add_option("--max-downloads", limits.max_downloads,
                 "downloads running at once; more wait their turn (default " +
                     std::to_string(d.max_downloads) + ")")
      ->check(CLI::Range(1, 1024));
}

void DaemonFlags::add_http_flags(CLI::App& app) {
  app.add_option("--http", options_.http_listen,
                 "also serve a read-only local Hub for Python clients (HF_ENDPOINT) and "
                 "Prometheus /metrics on HOST:PORT, loopback only (e.g. 127.0.0.1:8765)");
  auto& http = options_.http_limits;
  app.add_option("--http-max-connections", http.max_connections,
                 "--http connections open at once, all clients together (default " +
                     std::to_string(http.max_connections) + ")")
      ->check(CLI::Range(1, 65536));
  app.add_option("--http-max-connections-per-address", http.max_connections_per_address,
                 "--http connections open at once from one client address (default " +
                     std::to_string(http.max_connections_per_address) + ")")
      ->check(CLI::Range(1, 65536));
  app.add_option("--http-header-timeout", header_timeout_s_,
                 "seconds an --http request head may take to arrive whole, from the connection "
                 "or the previous response (default " +
                     std::to_string(header_timeout_s_) + ")")
      ->check(CLI::Range(1, 3600));
}

void DaemonFlags::apply() const {
  options_.http_limits.header_timeout = std::chrono::seconds(header_timeout_s_);
  if (!policy_.empty()) options_.policy_file = policy_;
  options_.resolve_ttl = std::chrono::seconds(resolve_ttl_s_);
}

}  // namespace kernelhub::daemon
