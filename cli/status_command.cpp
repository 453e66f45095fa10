// `kernelhub status [--json|--prometheus]`: whether a kernelhubd answers, and its health and
// counters; without one, says so and exits 0 (embedded mode is a normal way to run).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "client_options.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "kernelhub/cli/format_units.hpp"
#include "kernelhub/proto/prometheus.hpp"
#include "kernelhub/util/printable.hpp"

namespace kernelhub::cli {
namespace {

struct StatusArgs {
  ClientArgs client;
  bool json = false;
  bool prometheus = false;
};

std::uint64_t counter(const nlohmann::json& counters, const char* name) {
  const auto it = counters.find(name);
  return it != counters.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

void print_daemon(const nlohmann::json& s, const std::string& socket) {
  std::cout << util::printable(s.value("daemon", "kernelhubd")) << " (pid " << s.value("pid", 0)
            << ") on " << util::printable(socket) << ", up " << s.value("uptime_s", 0.0)
            << " s, protocol " << s.value("protocol", 0) << "\n";
  std::cout << "cache: " << util::printable(s.value("cache_root", "?")) << "\n";
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
            << counter(counters, "signatures_warned") << " served with a warning\n"
            << "cache use: " << format_bytes(counter(counters, "cache_bytes")) << " ("
            << format_bytes(counter(counters, "cache_pinned_bytes")) << " pinned), "
            << format_bytes(counter(counters, "cache_free_bytes")) << " free; "
            << counter(counters, "evictions") << " evicted ("
            << format_bytes(counter(counters, "evicted_bytes")) << ")\n";
}

// The Prometheus text of a daemon's status reply (the client hands it back without `type`
// and `id`, with `mode`): parsed by the protocol's own parser, rendered by the one renderer
// /metrics uses.
Result<std::string> prometheus_text(nlohmann::json status) {
  status.erase("mode");
  status["type"] = "status";
  status["id"] = 0;
  KH_TRY_ASSIGN(auto parsed, proto::parse_message(status, proto::Sender::daemon));
  const auto* reply = std::get_if<proto::StatusReply>(&parsed);
  if (reply == nullptr)
    return fail(ErrorCode::protocol_error, "kernelhubd answered status with another reply");
  return proto::render_prometheus(*reply);
}

int run_status(const StatusArgs& args) {
  auto client = open_client(args.client);
  if (!client) {
    // A textfile collector must learn that the daemon is down, not keep the last file.
    if (args.prometheus && !args.client.require_daemon) {
      std::cout << proto::render_prometheus_down();
      return 0;
    }
    return report(client.error());
  }
  auto status = client->status();
  if (!status) return report(status.error());
  if (args.prometheus) {
    if (!client->via_daemon()) {
      std::cout << proto::render_prometheus_down();
      return 0;
    }
    auto text = prometheus_text(*status);
    if (!text) return report(text.error());
    std::cout << *text;
  } else if (args.json) {
    std::cout << status->dump(2) << "\n";
  } else if (client->via_daemon()) {
    print_daemon(*status, client->where());
  } else {
    std::cout << "no daemon: embedded mode (cache: "
              << util::printable(status->value("cache_root", "?")) << ")\n";
  }
  return 0;
}

}  // namespace

void register_status(CLI::App& app, Action& action) {
  auto args = std::make_shared<StatusArgs>();
  auto* cmd = app.add_subcommand("status", "Show whether kernelhubd runs, its health and counters");
  cmd->add_option("--socket", args->client.socket,
                  "kernelhubd socket (default: $KERNELHUB_SOCKET, else " +
                      std::string(client::kDefaultSocket) + ")");
  cmd->add_flag("--require-daemon", args->client.require_daemon,
                "Exit non-zero when no daemon answers");
  auto* json = cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->add_flag("--prometheus", args->prometheus,
                "The counters in Prometheus text format (for the node exporter's textfile "
                "collector); kernelhub_up 0 when no daemon answers")
      ->excludes(json);
  cmd->callback([args, &action] { action = [args] { return run_status(*args); }; });
}

}  // namespace kernelhub::cli
