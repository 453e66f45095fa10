// `kernelhub prefetch (ORG/NAME ... (--version N | --revision REV) | --lockfile FILE |
// --mapping FILE)`: warms the cache (the daemon's when one runs) for several kernels; no
// descriptors are handed out.
#include <CLI/CLI.hpp>

#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "fetch_args.hpp"

namespace kernelhub::cli {
namespace {

struct PrefetchArgs {
  std::vector<std::string> repos;
  FetchArgs fetch;
};

int run_prefetch(const PrefetchArgs& args) {
  if (args.fetch.lockfile) return fetch_locked(args.fetch, /*prefetch=*/true);
  if (args.fetch.mapping) return fetch_mapped(args.fetch, /*prefetch=*/true);
  if (args.repos.empty()) {
    return report(Error{ErrorCode::invalid_argument,
                        "name kernels to prefetch, or --lockfile, or --mapping"});
  }
  std::vector<fetch::Request> requests;
  for (const auto& repo : args.repos) {
    auto request = make_request(args.fetch, repo);
    if (!request) return report(request.error());
    requests.push_back(std::move(*request));
  }
  return fetch_each(args.fetch, requests, /*prefetch=*/true);
}

}  // namespace

void register_prefetch(CLI::App& app, Action& action) {
  auto args = std::make_shared<PrefetchArgs>();
  auto* cmd =
      app.add_subcommand("prefetch", "Warm the cache (the daemon's when one runs) with kernels");
  cmd->footer(kExitCodes);
  auto* repos = cmd->add_option("repos", args->repos, "Kernel repositories ORG/NAME");
  add_fetch_options(*cmd, args->fetch, repos);
  cmd->callback([args, &action] { action = [args] { return run_prefetch(*args); }; });
}

}  // namespace kernelhub::cli
