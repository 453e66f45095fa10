#include "fetch_args.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

#include "exit_codes.hpp"
#include "kernelhub/cli/progress_bar.hpp"
#include "kernelhub/util/printable.hpp"

namespace kernelhub::cli {

void add_fetch_options(CLI::App& cmd, FetchArgs& args, CLI::Option* repos) {
  auto* lockfile = cmd.add_option("--lockfile", args.lockfile,
                                  "Fetch every kernel of this kernels.lock at its locked commit");
  auto* version = cmd.add_option("--version", args.version, "Major version (branch vN)");
  auto* revision = cmd.add_option("--revision", args.revision, "Branch, tag or commit sha");
  version->excludes(revision);
  lockfile->excludes(version)->excludes(revision)->excludes(repos);
  auto* variant =
      cmd.add_option("--variant", args.variant, "Exact build variant (folder under build/)");
  auto* all = cmd.add_flag("--all-variants", args.all_variants, "Fetch every build variant");
  variant->excludes(all);
  cmd.add_option("--torch-version", args.torch_version, "Torch version to select for, e.g. 2.15");
  cmd.add_option("--backend", args.backend, "Backend to select for: cpu, cuda, cu132, ...");
  cmd.add_flag("--json", args.json, "Print a JSON description instead of the path");
  add_client_options(cmd, args.client, /*with_policy=*/true);
}

namespace {
// The variant and platform flags every request takes as given.
Result<void> apply_variant_options(const FetchArgs& args, fetch::Request& request) {
  KH_TRY_ASSIGN(request.variants, fetch::VariantChoice::one_of(args.variant, args.all_variants));
  request.platform.torch_version = args.torch_version;
  request.platform.backend = args.backend;
  return ok();
}
}  // namespace

Result<fetch::Request> make_request(const FetchArgs& args, const std::string& repo_text) {
  KH_TRY_ASSIGN(auto ref,
                fetch::Ref::one_of(args.version, args.revision, "--version or --revision"));
  auto repo = trust::RepoId::parse(repo_text);
  if (!repo) return fail(ErrorCode::invalid_argument, repo.error().message);
  fetch::Request request(std::move(*repo), std::move(ref));
  KH_TRY(apply_variant_options(args, request));
  return request;
}

Result<trust::Lockfile> read_args_lockfile(const FetchArgs& args) {
  auto lock = trust::read_lockfile(*args.lockfile);
  if (!lock) return fail(lock.error());
  if (lock->entries.empty()) {
    return fail(ErrorCode::malformed_lockfile, *args.lockfile + " locks no kernel");
  }
  return lock;
}

Result<fetch::Request> make_locked_request(const FetchArgs& args, const trust::LockEntry& entry) {
  KH_TRY_ASSIGN(auto request,
                fetch::Request::locked(entry.repo, entry.commit, {entry.variant_hashes}));
  KH_TRY(apply_variant_options(args, request));
  return request;
}

int fetch_locked(const FetchArgs& args, bool prefetch) {
  auto lock = read_args_lockfile(args);
  if (!lock) return report(lock.error());
  std::vector<fetch::Request> requests;
  for (const auto& entry : lock->entries) {
    auto request = make_locked_request(args, entry);
    if (!request) return report(request.error());
    requests.push_back(std::move(*request));
  }
  return fetch_each(args, requests, prefetch);
}

int fetch_each(const FetchArgs& args, const std::vector<fetch::Request>& requests, bool prefetch) {
  auto client = open_client(args.client);
  if (!client) return report(client.error());
  int exit_code = 0;
  auto out = nlohmann::json::array();
  for (const auto& request : requests) {
    ProgressBar bar;
    const auto on_progress = [&bar](const hub::FetchProgress& p) { bar.update(p); };
    auto result =
        prefetch ? client->prefetch(request, on_progress) : client->fetch(request, on_progress);
    bar.finish();
    if (!result) {
      const int code = report(result.error());
      if (exit_code == 0) exit_code = code;
      continue;
    }
    print_fetch_warnings(*result);
    if (args.json) {
      out.push_back(fetched_to_json(*result));
    } else {
      print_variant_paths(*result);
    }
  }
  if (args.json) std::cout << out.dump(2) << "\n";
  return exit_code;
}

namespace {
std::string variant_path(const client::FetchedKernel& kernel, const std::string& variant) {
  return (kernel.snapshot_path / "build" / variant).string();
}
}  // namespace

nlohmann::json fetched_to_json(const client::FetchedKernel& kernel) {
  nlohmann::json out;
  out["repo"] = kernel.repo.str();
  out["commit"] = kernel.commit;
  out["variants"] = kernel.variants;
  if (kernel.variants.size() == 1) {
    out["variant"] = kernel.variants.front();
    out["path"] = variant_path(kernel, kernel.variants.front());
  } else {
    out["path"] = kernel.snapshot_path.string();
  }
  out["snapshot"] = kernel.snapshot_path.string();
  out["from_cache"] = kernel.from_cache;
  out["via_daemon"] = kernel.via_daemon;
  // Why the Hub was not used and the cached snapshot was served instead; null normally.
  out["cache_fallback"] = kernel.cache_fallback.empty() ? nlohmann::json(nullptr)
                                                        : nlohmann::json(kernel.cache_fallback);
  // The vN move the rollback guard refused (the accepted commit was served); null normally.
  out["refused_move"] =
      kernel.refused_move.empty() ? nlohmann::json(nullptr) : nlohmann::json(kernel.refused_move);
  // [signatures] warn mode: variants served although their signature does not hold.
  out["signature_warnings"] = kernel.signature_warnings;
  out["files"] = nlohmann::json::array();
  for (const auto& file : kernel.files) {
    out["files"].push_back({{"path", file.path}, {"size", file.size}, {"sha256", file.sha256}});
  }
  return out;
}

void print_fetch_warnings(const client::FetchedKernel& kernel) {
  if (kernel.via_daemon && !kernel.refused_move.empty()) {
    std::cerr << "kernelhub: warning: " << util::printable(kernel.refused_move) << "\n";
  }
  for (const auto& warning : kernel.signature_warnings) {
    std::cerr << "kernelhub: warning: " << util::printable(warning) << "\n";
  }
}

void print_variant_paths(const client::FetchedKernel& kernel) {
  for (const auto& v : kernel.variants) {
    std::cout << util::printable(variant_path(kernel, v)) << "\n";
  }
}

}  // namespace kernelhub::cli
