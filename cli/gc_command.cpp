// `kernelhub gc`: removes snapshots no ref points to, then blobs no snapshot links to (the
// daemon's cache when one runs). Descriptors already handed out stay valid.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "client_options.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "kernelhub/cli/format_units.hpp"

namespace kernelhub::cli {
namespace {

struct GcArgs {
  ClientArgs client;
  bool json = false;
};

int run_gc(const GcArgs& args) {
  auto client = open_client(args.client);
  if (!client) return report(client.error());
  auto result = client->gc();
  if (!result) return report(result.error());
  if (args.json) {
    std::cout << result->dump(2) << "\n";
  } else {
    std::cout << "removed " << result->value("removed_snapshots", 0) << " snapshots and "
              << result->value("removed_blobs", 0) << " blobs, freed "
              << format_bytes(result->value("freed_bytes", std::uint64_t{0})) << "\n";
  }
  return 0;
}

}  // namespace

void register_gc(CLI::App& app, Action& action) {
  auto args = std::make_shared<GcArgs>();
  auto* cmd = app.add_subcommand("gc", "Remove unreferenced snapshots and blobs from the cache");
  add_client_options(*cmd, args->client, /*with_policy=*/false);
  cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->callback([args, &action] { action = [args] { return run_gc(*args); }; });
}

}  // namespace kernelhub::cli
