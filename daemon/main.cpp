// kernelhubd: the per-host kernel daemon. Flags and HF_* environment as for the CLI.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "kernelhub/daemon/daemon.hpp"
#include "kernelhub/daemon/log_format.hpp"
#include "kernelhub_version.hpp"

int main(int argc, char** argv) {
  using kernelhub::daemon::Daemon;
  kernelhub::daemon::DaemonOptions options;
  options.env = kernelhub::util::Environment::from_process();
  if (auto socket = options.env.get("KERNELHUB_SOCKET")) options.socket_path = *socket;

  CLI::App app{
      "kernelhubd: fetches, verifies and hands out compute kernels for every user of this host"};
  app.set_version_flag("--version", "kernelhubd " + std::string(kernelhub::kVersion));
  std::string policy;
  long ttl = options.resolve_ttl.count();
  app.add_option("--socket", options.socket_path,
                 "Unix socket to listen on (unless systemd passes one)");
  app.add_option("--cache-dir", options.cache_dir, "the daemon's own kernel cache");
  app.add_option("--policy", policy, "admin policy file (TOML; reloaded on SIGHUP)");
  // Limits: a flag given here wins over the policy's [daemon] key; neither: the default.
  auto& limits = options.limit_flags;
  const auto& d = options.limits;
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
  app.add_option("--resolve-ttl", ttl, "seconds a version/revision -> commit answer is reused")
      ->check(CLI::Range(0, 86400));
  app.add_option("--http", options.http_listen,
                 "also serve a read-only local Hub for Python clients (HF_ENDPOINT) and "
                 "Prometheus /metrics on HOST:PORT, loopback only (e.g. 127.0.0.1:8765)");
  auto& http = options.http_limits;
  long header_timeout =
      std::chrono::duration_cast<std::chrono::seconds>(http.header_timeout).count();
  app.add_option("--http-max-connections", http.max_connections,
                 "--http connections open at once, all clients together (default " +
                     std::to_string(http.max_connections) + ")")
      ->check(CLI::Range(1, 65536));
  app.add_option("--http-max-connections-per-address", http.max_connections_per_address,
                 "--http connections open at once from one client address (default " +
                     std::to_string(http.max_connections_per_address) + ")")
      ->check(CLI::Range(1, 65536));
  app.add_option("--http-header-timeout", header_timeout,
                 "seconds an --http request head may take to arrive whole, from the connection "
                 "or the previous response (default " +
                     std::to_string(header_timeout) + ")")
      ->check(CLI::Range(1, 3600));
  CLI11_PARSE(app, argc, argv);
  http.header_timeout = std::chrono::seconds(header_timeout);
  if (!policy.empty()) options.policy_file = policy;
  options.resolve_ttl = std::chrono::seconds(ttl);
  options.handle_signals = true;

  const auto target = kernelhub::daemon::log_target(STDERR_FILENO, std::getenv("JOURNAL_STREAM"));
  auto logger = spdlog::stderr_color_mt(
      "kernelhubd", target == kernelhub::daemon::LogTarget::terminal ? spdlog::color_mode::automatic
                                                                     : spdlog::color_mode::never);
  logger->set_formatter(kernelhub::daemon::make_log_formatter(target));
  spdlog::set_default_logger(logger);
  if (auto level = options.env.get("KERNELHUB_LOG"))
    spdlog::set_level(spdlog::level::from_str(*level));

  ::umask(022);  // nothing the daemon creates is writable by group or others
  Daemon daemon(std::move(options));
  auto result = daemon.run();
  if (!result) {
    spdlog::error("{}: {}", kernelhub::to_string(result.error().code), result.error().message);
    return 1;
  }
  // Work stuck past the grace: we own the process, so exit without its threads.
  if (*result == Daemon::Finish::abandoned) std::_Exit(0);
  return 0;
}
