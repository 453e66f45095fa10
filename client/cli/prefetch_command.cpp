// `kernelhub prefetch ORG/NAME ... (--version N | --revision REV)`: warms the cache (the
// daemon's when one runs) for several kernels; no descriptors are handed out.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "client/cli/commands.hpp"
#include "client/cli/exit_codes.hpp"
#include "client/cli/fetch_args.hpp"
#include "client/cli/progress_bar.hpp"

namespace kernelhub::cli {
namespace {

struct PrefetchArgs {
  std::vector<std::string> repos;
  FetchArgs fetch;
};

// Every repo is tried even after a failure; the exit code is the first failure's.
int run_prefetch(const PrefetchArgs& args) {
  std::vector<hub::FetchRequest> requests;
  for (const auto& repo : args.repos) {
    auto request = make_request(args.fetch, repo);
    if (!request) return report(request.error());
    requests.push_back(std::move(*request));
  }
  auto client = open_client(args.fetch.client);
  if (!client) return report(client.error());

  int exit_code = 0;
  auto out = nlohmann::json::array();
  for (const auto& request : requests) {
    ProgressBar bar;
    auto result = client->prefetch(request, [&bar](const hub::FetchProgress& p) { bar.update(p); });
    bar.finish();
    if (!result) {
      const int code = report(result.error());
      if (exit_code == 0) exit_code = code;
      continue;
    }
    if (args.fetch.json) {
      out.push_back(fetched_to_json(*result));
    } else {
      print_variant_paths(*result);
    }
  }
  if (args.fetch.json) std::cout << out.dump(2) << "\n";
  return exit_code;
}

void register_prefetch(CLI::App& app, Action& action) {
  auto args = std::make_shared<PrefetchArgs>();
  auto* cmd =
      app.add_subcommand("prefetch", "Warm the cache (the daemon's when one runs) with kernels");
  cmd->footer(kExitCodes);
  cmd->add_option("repos", args->repos, "Kernel repositories ORG/NAME")->required();
  add_fetch_options(*cmd, args->fetch);
  cmd->callback([args, &action] { action = [args] { return run_prefetch(*args); }; });
}

}  // namespace

KH_REGISTER_COMMAND(register_prefetch);

}  // namespace kernelhub::cli
