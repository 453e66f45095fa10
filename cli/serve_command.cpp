// `kernelhub serve --root DIR [--bind HOST:PORT] [--port N] [--port-file FILE] ...`: serves a
// local store over the Hub API (for air-gapped sites, tests and the official clients via
// HF_ENDPOINT). Port 0 picks a free port; the port file is written once the socket is bound.
#include <pthread.h>
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "kernelhub/hub/server/hub_server.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/printable.hpp"

namespace kernelhub::cli {
namespace {

struct ServeArgs {
  std::string root;
  std::string bind = "127.0.0.1:0";
  std::optional<int> port;
  std::string port_file;
  std::size_t tree_page_size = 1000;
  bool test_endpoints = false;
  std::vector<std::string> trusted_publishers{"kernels-community"};
  std::optional<std::uint64_t> reset_after_bytes;
  int reset_times = 1;
  std::optional<int> stall_ms;
  bool corrupt = false;
  int fail_status = 0;
  int fail_count = 0;
  int retry_after = 0;
  bool ignore_range = false;
  std::string path_filter;
  std::uint64_t trickle = 0;
  bool endless = false;
  std::string fault_scope = "files";
  std::string redirect_to;
  std::string tls_cert;
  std::string tls_key;
  std::string fail_path_filter;
  std::vector<std::string> renames;  // FROM=TO
  bool anonymous_401 = false;
  std::vector<std::string> private_repos;
  std::vector<std::string> model_only_repos;
};

int run_serve(const ServeArgs& args) {
  hub::server::ServerOptions options;
  options.root = args.root;
  const auto colon = args.bind.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "kernelhub serve: --bind must be HOST:PORT\n";
    return 2;
  }
  options.bind_host = args.bind.substr(0, colon);
  try {
    options.port = std::stoi(args.bind.substr(colon + 1));
  } catch (const std::exception&) {
    std::cerr << "kernelhub serve: bad port in --bind " << args.bind << "\n";
    return 2;
  }
  if (args.port) options.port = *args.port;
  options.tree_page_size = args.tree_page_size;
  options.test_endpoints = args.test_endpoints;
  if (args.tls_cert.empty() != args.tls_key.empty()) {
    std::cerr << "kernelhub serve: --tls-cert and --tls-key go together\n";
    return 2;
  }
  options.tls_cert = args.tls_cert;
  options.tls_key = args.tls_key;
  options.trusted_publishers = {args.trusted_publishers.begin(), args.trusted_publishers.end()};
  if (!std::filesystem::is_directory(options.root)) {
    std::cerr << "kernelhub serve: " << args.root << " is not a directory\n";
    return 1;
  }

  hub::server::FaultPlan faults;
  faults.reset_after_bytes = args.reset_after_bytes;
  faults.reset_times = args.reset_times;
  if (args.stall_ms) faults.stall = std::chrono::milliseconds(*args.stall_ms);
  faults.corrupt_one_byte = args.corrupt;
  faults.fail_status = args.fail_status;
  faults.fail_count = args.fail_count;
  faults.retry_after_seconds = args.retry_after;
  faults.ignore_range = args.ignore_range;
  faults.path_filter = args.path_filter;
  faults.trickle_bytes_per_second = args.trickle;
  faults.endless = args.endless;
  faults.scope = args.fault_scope;
  faults.redirect_to = args.redirect_to;
  faults.fail_path_filter = args.fail_path_filter;
  for (const auto& rename : args.renames) {
    const auto eq = rename.find('=');
    if (eq == std::string::npos || !trust::RepoId::parse(rename.substr(0, eq)) ||
        !trust::RepoId::parse(rename.substr(eq + 1))) {
      std::cerr << "kernelhub serve: --fault-rename wants ORG/NAME=ORG/NAME, got " << rename
                << "\n";
      return 2;
    }
    faults.renames[rename.substr(0, eq)] = rename.substr(eq + 1);
  }
  faults.anonymous_401 = args.anonymous_401;
  faults.private_repos = {args.private_repos.begin(), args.private_repos.end()};
  faults.model_only_repos = {args.model_only_repos.begin(), args.model_only_repos.end()};

  // Block the stop signals before any server thread exists; this thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  hub::server::HubServer server(options);
  server.set_faults(faults);
  if (auto started = server.start(); !started) {
    std::cerr << "kernelhub serve: " << started.error().message << "\n";
    return 1;
  }
  // Whole or not at all, so a waiting script never reads a half-written port number; a hint,
  // not data: no fsync.
  if (!args.port_file.empty() &&
      !util::write_file_atomic(args.port_file, std::to_string(server.port()) + "\n", 0644,
                               util::Durability::none)) {
    std::cerr << "kernelhub serve: cannot write " << util::printable(args.port_file) << "\n";
    return 1;
  }
  std::cout << "serving " << args.root << " on " << server.endpoint() << std::endl;
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  server.stop();
  return 0;
}

}  // namespace

void register_serve(CLI::App& app, Action& action) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd =
      app.add_subcommand("serve", "Serve a local kernel store over the Hugging Face Hub API");
  cmd->add_option("--root", args->root, "Store directory (see kernelhub publish)")->required();
  cmd->add_option("--bind", args->bind, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--port", args->port, "Port (overrides the port in --bind; 0: any free port)");
  cmd->add_option("--port-file", args->port_file, "Write the bound port here once listening");
  cmd->add_option("--tree-page-size", args->tree_page_size, "Entries per /tree page")
      ->capture_default_str();
  cmd->add_flag("--test-endpoints", args->test_endpoints, "Enable /_kernelhub/{requests,faults}");
  cmd->add_option(
         "--trusted-publisher", args->trusted_publishers,
         "Orgs reported as trustedKernelPublisher in /api/organizations/ORG/overview (repeatable)")
      ->capture_default_str();
  cmd->add_option("--fault-reset-after-bytes", args->reset_after_bytes,
                  "Drop downloads after N body bytes");
  cmd->add_option("--fault-reset-times", args->reset_times, "How many downloads get dropped")
      ->capture_default_str();
  cmd->add_option("--fault-stall-ms", args->stall_ms, "Stall downloads after the headers");
  cmd->add_flag("--fault-corrupt", args->corrupt, "Flip one byte in the middle of downloads");
  cmd->add_option("--fault-status", args->fail_status,
                  "Answer requests with this status (429, 503)");
  cmd->add_option("--fault-count", args->fail_count, "How many requests get --fault-status");
  cmd->add_option("--fault-retry-after", args->retry_after,
                  "Retry-After seconds with --fault-status");
  cmd->add_flag("--fault-ignore-range", args->ignore_range,
                "Answer Range requests with 200 and the full body");
  cmd->add_option("--fault-path-filter", args->path_filter,
                  "Download faults only for paths containing this");
  cmd->add_option("--tls-cert", args->tls_cert,
                  "PEM certificate (chain) to serve HTTPS; needs --tls-key");
  cmd->add_option("--tls-key", args->tls_key, "PEM private key of --tls-cert");
  cmd->add_option("--fault-trickle", args->trickle, "Send bodies at N bytes per second");
  cmd->add_flag("--fault-endless", args->endless,
                "Bodies never end (chunked, the same bytes over and over)");
  cmd->add_option("--fault-scope", args->fault_scope,
                  "Where --fault-stall-ms/--fault-trickle/--fault-endless act: files, api "
                  "(/api/ replies whose path contains --fault-path-filter) or all")
      ->check(CLI::IsMember({"files", "api", "all"}))
      ->capture_default_str();
  cmd->add_option("--fault-redirect-to", args->redirect_to,
                  "Downloads answer 302 to this base URL plus the request path");
  cmd->add_option("--fault-status-path-filter", args->fail_path_filter,
                  "--fault-status only for request paths containing this (e.g. /revision/)");
  cmd->add_option("--fault-rename", args->renames,
                  "ORG/NAME=ORG2/NAME2: the first answers 307 to the second, as the Hub does for "
                  "a renamed or transferred repo (repeatable)");
  cmd->add_flag("--fault-anonymous-401", args->anonymous_401,
                "Without Authorization, a missing or --fault-private-repo repo answers 401 "
                "without X-Error-Code, as the Hub does");
  cmd->add_option("--fault-private-repo", args->private_repos,
                  "ORG/NAME needing a token under --fault-anonymous-401 (repeatable)");
  cmd->add_option("--fault-model-only-repo", args->model_only_repos,
                  "ORG/NAME served only under the model type (a legacy kernel repo; repeatable)");
  cmd->callback([args, &action] { action = [args] { return run_serve(*args); }; });
}

}  // namespace kernelhub::cli
