// `kernelhub download (ORG/NAME (--version N | --revision REV) | --lockfile FILE) ...`: fetches
// through kernelhubd when one answers on the socket, else in-process against the user's cache, and
// prints where the variant landed.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "fetch_args.hpp"
#include "kernelhub/cli/progress_bar.hpp"

namespace kernelhub::cli {
namespace {

struct DownloadArgs {
  std::string repo;
  FetchArgs fetch;
};

int run_download(const DownloadArgs& args) {
  if (args.fetch.lockfile) return fetch_locked(args.fetch, /*prefetch=*/false);
  if (args.fetch.mapping) return fetch_mapped(args.fetch, /*prefetch=*/false);
  if (args.repo.empty()) {
    return report(
        Error{ErrorCode::invalid_argument, "name a kernel ORG/NAME, or --lockfile, or --mapping"});
  }
  auto request = make_request(args.fetch, args.repo);
  if (!request) return report(request.error());
  auto client = open_client(args.fetch.client);
  if (!client) return report(client.error());

  ProgressBar bar;
  auto result = client->fetch(*request, [&bar](const hub::FetchProgress& p) { bar.update(p); });
  bar.finish();
  if (!result) return report(result.error());
  print_fetch_warnings(*result);
  if (args.fetch.json) {
    std::cout << fetched_to_json(*result).dump(2) << "\n";
  } else {
    print_variant_paths(*result);
  }
  return 0;
}

}  // namespace

void register_download(CLI::App& app, Action& action) {
  auto args = std::make_shared<DownloadArgs>();
  auto* cmd =
      app.add_subcommand("download", "Download a kernel's build variant into the cache (verified)");
  cmd->footer(kExitCodes);
  auto* repo = cmd->add_option("repo", args->repo, "Kernel repository ORG/NAME");
  add_fetch_options(*cmd, args->fetch, repo);
  cmd->callback([args, &action] { action = [args] { return run_download(*args); }; });
}

}  // namespace kernelhub::cli
