// kernelhub-test-hub: `kernelhub serve` with a fault plan, for tests in other processes (the
// Python conformance suites, the site tier, benches). Same options as serve, plus
// --test-endpoints (/_kernelhub/{requests,faults}) and the plan's --fault-* flags. Test-only:
// it is built with the tests and never installed.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/cli/serve_options.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "support/fault_hub/fault_hooks.hpp"

namespace {

using kernelhub::testing::FaultPlan;

struct FaultArgs {
  bool test_endpoints = false;
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
  std::string scope = "files";
  std::string redirect_to;
  std::string fail_path_filter;
  std::vector<std::string> renames;  // FROM=TO
  bool anonymous_401 = false;
  std::vector<std::string> private_repos;
  std::vector<std::string> model_only_repos;
};

void add_fault_options(CLI::App& app, FaultArgs& args) {
  app.add_flag("--test-endpoints", args.test_endpoints, "Enable /_kernelhub/{requests,faults}");
  app.add_option("--fault-reset-after-bytes", args.reset_after_bytes,
                 "Drop downloads after N body bytes");
  app.add_option("--fault-reset-times", args.reset_times, "How many downloads get dropped");
  app.add_option("--fault-stall-ms", args.stall_ms, "Stall downloads after the headers");
  app.add_flag("--fault-corrupt", args.corrupt, "Flip one byte in the middle of downloads");
  app.add_option("--fault-status", args.fail_status, "Answer requests with this status");
  app.add_option("--fault-count", args.fail_count, "How many requests get --fault-status");
  app.add_option("--fault-retry-after", args.retry_after, "Retry-After seconds");
  app.add_flag("--fault-ignore-range", args.ignore_range, "Answer Range requests with 200");
  app.add_option("--fault-path-filter", args.path_filter, "Download faults only for these paths");
  app.add_option("--fault-trickle", args.trickle, "Send bodies at N bytes per second");
  app.add_flag("--fault-endless", args.endless, "Bodies never end");
  app.add_option("--fault-scope", args.scope, "files, api or all")
      ->check(CLI::IsMember({"files", "api", "all"}));
  app.add_option("--fault-redirect-to", args.redirect_to, "Downloads answer 302 to this base");
  app.add_option("--fault-status-path-filter", args.fail_path_filter,
                 "--fault-status only for request paths containing this");
  app.add_option("--fault-rename", args.renames, "ORG/NAME=ORG2/NAME2 answers 307 (repeatable)");
  app.add_flag("--fault-anonymous-401", args.anonymous_401,
               "Anonymous requests for missing or private repos answer 401");
  app.add_option("--fault-private-repo", args.private_repos, "ORG/NAME needing a token");
  app.add_option("--fault-model-only-repo", args.model_only_repos,
                 "ORG/NAME served only under the model type");
}

std::optional<FaultPlan> fault_plan(const FaultArgs& args) {
  FaultPlan plan;
  plan.reset_after_bytes = args.reset_after_bytes;
  plan.reset_times = args.reset_times;
  if (args.stall_ms) plan.stall = std::chrono::milliseconds(*args.stall_ms);
  plan.corrupt_one_byte = args.corrupt;
  plan.fail_status = args.fail_status;
  plan.fail_count = args.fail_count;
  plan.retry_after_seconds = args.retry_after;
  plan.ignore_range = args.ignore_range;
  plan.path_filter = args.path_filter;
  plan.trickle_bytes_per_second = args.trickle;
  plan.endless = args.endless;
  plan.scope = args.scope;
  plan.redirect_to = args.redirect_to;
  plan.fail_path_filter = args.fail_path_filter;
  for (const auto& rename : args.renames) {
    const auto eq = rename.find('=');
    if (eq == std::string::npos || !kernelhub::trust::RepoId::parse(rename.substr(0, eq)) ||
        !kernelhub::trust::RepoId::parse(rename.substr(eq + 1))) {
      std::cerr << "kernelhub-test-hub: --fault-rename wants ORG/NAME=ORG/NAME, got " << rename
                << "\n";
      return std::nullopt;
    }
    plan.renames[rename.substr(0, eq)] = rename.substr(eq + 1);
  }
  plan.anonymous_401 = args.anonymous_401;
  plan.private_repos = {args.private_repos.begin(), args.private_repos.end()};
  plan.model_only_repos = {args.model_only_repos.begin(), args.model_only_repos.end()};
  return plan;
}

int run(int argc, char** argv) {
  CLI::App app("A local store over the Hub API with injected faults (tests only)",
               "kernelhub-test-hub");
  kernelhub::cli::ServeArgs serve;
  FaultArgs faults;
  kernelhub::cli::add_serve_options(app, serve);
  add_fault_options(app, faults);
  CLI11_PARSE(app, argc, argv);
  const auto plan = fault_plan(faults);
  if (!plan) return 2;
  auto hooks = std::make_shared<kernelhub::testing::FaultHooks>(serve.root, faults.test_endpoints);
  hooks->set_plan(*plan);
  return kernelhub::cli::serve_until_signal("kernelhub-test-hub", serve, hooks);
}

}  // namespace

int main(int argc, char** argv) {
  // A test's server: whatever escapes is reported on one line, never a terminate() trace.
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "kernelhub-test-hub: " << e.what() << "\n";
    return 1;
  }
}
