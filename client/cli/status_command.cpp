// `kernelhub status [--json]`: whether a kernelhubd answers, and its health and counters;
// without one, says so and exits 0 (embedded mode is a normal way to run).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "client/cli/client_options.hpp"
#include "client/cli/commands.hpp"
#include "client/cli/exit_codes.hpp"
#include "client/cli/format_units.hpp"

namespace kernelhub::cli {
namespace {

struct StatusArgs {
  ClientArgs client;
  bool json = false;
};

std::uint64_t counter(const nlohmann::json& counters, const char* name) {
  const auto it = counters.find(name);
  return it != counters.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

void print_daemon(const nlohmann::json& s, const std::string& socket) {
  std::cout << s.value("daemon", "kernelhubd") << " (pid " << s.value("pid", 0) << ") on " << socket
            << ", up " << s.value("uptime_s", 0.0) << " s, protocol " << s.value("protocol", 0)
            << "\n";
  std::cout << "cache: " << s.value("cache_root", "?") << "\n";
  const auto counters = s.value("counters", nlohmann::json::object());
  std::cout << "requests " << counter(counters, "requests") << ", hits "
            << counter(counters, "hits") << ", misses " << counter(counters, "misses")
            << ", errors " << counter(counters, "errors") << "\n"
            << "downloaded " << format_bytes(counter(counters, "bytes_downloaded")) << " in "
            << counter(counters, "upstream_requests") << " upstream requests\n"
            << "connections " << counter(counters, "connections") << " ("
            << counter(counters, "active_connections") << " active)\n"
            << "version moves refused (rollback guard): " << counter(counters, "rollbacks_refused")
            << "\n"
            << "signatures: " << counter(counters, "signatures_refused") << " refused, "
            << counter(counters, "signatures_warned") << " served with a warning\n";
}

int run_status(const StatusArgs& args) {
  auto client = open_client(args.client);
  if (!client) return report(client.error());
  auto status = client->status();
  if (!status) return report(status.error());
  if (args.json) {
    std::cout << status->dump(2) << "\n";
  } else if (client->via_daemon()) {
    print_daemon(*status, client->where());
  } else {
    std::cout << "no daemon: embedded mode (cache: " << status->value("cache_root", "?") << ")\n";
  }
  return 0;
}

void register_status(CLI::App& app, Action& action) {
  auto args = std::make_shared<StatusArgs>();
  auto* cmd = app.add_subcommand("status", "Show whether kernelhubd runs, its health and counters");
  cmd->add_option("--socket", args->client.socket,
                  "kernelhubd socket (default: $KERNELHUB_SOCKET, else " +
                      std::string(client::kDefaultSocket) + ")");
  cmd->add_flag("--require-daemon", args->client.require_daemon,
                "Exit non-zero when no daemon answers");
  cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->callback([args, &action] { action = [args] { return run_status(*args); }; });
}

}  // namespace

KH_REGISTER_COMMAND(register_status);

}  // namespace kernelhub::cli
