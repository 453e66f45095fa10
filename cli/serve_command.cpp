// `kernelhub serve --root DIR [--bind HOST:PORT] [--port N] [--port-file FILE] ...`: serves a
// local store over the Hub API (for air-gapped sites and the official clients via
// HF_ENDPOINT). Port 0 picks a free port; the port file is written once the socket is bound.
#include <pthread.h>
#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "commands.hpp"
#include "kernelhub/cli/serve_options.hpp"
#include "kernelhub/hub/server/hub_server.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/printable.hpp"

namespace kernelhub::cli {

int serve_until_signal(const std::string& program, const ServeArgs& args,
                       std::shared_ptr<hub::server::ServeHooks> hooks) {
  hub::server::ServerOptions options;
  options.root = args.root;
  const auto colon = args.bind.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << program << ": --bind must be HOST:PORT\n";
    return 2;
  }
  options.bind_host = args.bind.substr(0, colon);
  try {
    options.port = std::stoi(args.bind.substr(colon + 1));
  } catch (const std::exception&) {
    std::cerr << program << ": bad port in --bind " << args.bind << "\n";
    return 2;
  }
  if (args.port) options.port = *args.port;
  options.tree_page_size = args.tree_page_size;
  if (args.tls_cert.empty() != args.tls_key.empty()) {
    std::cerr << program << ": --tls-cert and --tls-key go together\n";
    return 2;
  }
  options.tls_cert = args.tls_cert;
  options.tls_key = args.tls_key;
  options.trusted_publishers = {args.trusted_publishers.begin(), args.trusted_publishers.end()};
  if (!std::filesystem::is_directory(options.root)) {
    std::cerr << program << ": " << args.root << " is not a directory\n";
    return 1;
  }

  options.hooks = std::move(hooks);

  // Block the stop signals before any server thread exists; this thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  hub::server::HubServer server(options);
  if (auto started = server.start(); !started) {
    std::cerr << program << ": " << started.error().message << "\n";
    return 1;
  }
  // Whole or not at all, so a waiting script never reads a half-written port number; a hint,
  // not data: no fsync.
  if (!args.port_file.empty() &&
      !util::write_file_atomic(args.port_file, std::to_string(server.port()) + "\n", 0644,
                               util::Durability::none)) {
    std::cerr << program << ": cannot write " << util::printable(args.port_file) << "\n";
    return 1;
  }
  std::cout << "serving " << args.root << " on " << server.endpoint() << std::endl;
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  server.stop();
  return 0;
}

void add_serve_options(CLI::App& cmd, ServeArgs& args) {
  cmd.add_option("--root", args.root, "Store directory (see kernelhub publish)")->required();
  cmd.add_option("--bind", args.bind, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  cmd.add_option("--port", args.port, "Port (overrides the port in --bind; 0: any free port)");
  cmd.add_option("--port-file", args.port_file, "Write the bound port here once listening");
  cmd.add_option("--tree-page-size", args.tree_page_size, "Entries per /tree page")
      ->capture_default_str();
  cmd.add_option(
         "--trusted-publisher", args.trusted_publishers,
         "Orgs reported as trustedKernelPublisher in /api/organizations/ORG/overview (repeatable)")
      ->capture_default_str();
  cmd.add_option("--tls-cert", args.tls_cert,
                 "PEM certificate (chain) to serve HTTPS; needs --tls-key");
  cmd.add_option("--tls-key", args.tls_key, "PEM private key of --tls-cert");
}

void register_serve(CLI::App& app, Action& action) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd =
      app.add_subcommand("serve", "Serve a local kernel store over the Hugging Face Hub API");
  add_serve_options(*cmd, *args);
  cmd->callback([args, &action] {
    action = [args] { return serve_until_signal("kernelhub serve", *args); };
  });
}

}  // namespace kernelhub::cli
