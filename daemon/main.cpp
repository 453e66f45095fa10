// kernelhubd: the per-host kernel daemon. Flags and HF_* environment as for the CLI.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "daemon_flags.hpp"
#include "kernelhub/daemon/daemon.hpp"
#include "kernelhub/daemon/log_format.hpp"
#include "kernelhub_version.hpp"

namespace {

// To stderr: the journal's format under systemd (JOURNAL_STREAM), colours on a terminal.
void set_up_logging(const kernelhub::util::Environment& env) {
  using kernelhub::daemon::LogTarget;
  const auto target = kernelhub::daemon::log_target(STDERR_FILENO, std::getenv("JOURNAL_STREAM"));
  auto logger = spdlog::stderr_color_mt("kernelhubd", target == LogTarget::terminal
                                                          ? spdlog::color_mode::automatic
                                                          : spdlog::color_mode::never);
  logger->set_formatter(kernelhub::daemon::make_log_formatter(target));
  spdlog::set_default_logger(logger);
  if (auto level = env.get("KERNELHUB_LOG")) spdlog::set_level(spdlog::level::from_str(*level));
}

}  // namespace

int main(int argc, char** argv) {
  using kernelhub::daemon::Daemon;
  kernelhub::daemon::DaemonOptions options;
  options.env = kernelhub::util::Environment::from_process();
  if (auto socket = options.env.get("KERNELHUB_SOCKET")) options.socket_path = *socket;

  CLI::App app{
      "kernelhubd: fetches, verifies and hands out compute kernels for every user of this host"};
  app.set_version_flag("--version", "kernelhubd " + std::string(kernelhub::kVersion));
  const kernelhub::daemon::DaemonFlags flags(app, options);
  CLI11_PARSE(app, argc, argv);
  flags.apply();
  options.handle_signals = true;
  set_up_logging(options.env);

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
