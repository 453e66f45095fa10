#include "client/cli/fetch_args.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

namespace kernelhub::cli {

void add_fetch_options(CLI::App& cmd, FetchArgs& args) {
  auto* version = cmd.add_option("--version", args.version, "Major version (branch vN)");
  auto* revision = cmd.add_option("--revision", args.revision, "Branch, tag or commit sha");
  version->excludes(revision);
  auto* variant =
      cmd.add_option("--variant", args.variant, "Exact build variant (folder under build/)");
  auto* all = cmd.add_flag("--all-variants", args.all_variants, "Fetch every build variant");
  variant->excludes(all);
  cmd.add_option("--torch-version", args.torch_version, "Torch version to select for, e.g. 2.15");
  cmd.add_option("--backend", args.backend, "Backend to select for: cpu, cuda, cu132, ...");
  cmd.add_flag("--json", args.json, "Print a JSON description instead of the path");
  add_client_options(cmd, args.client, /*with_policy=*/true);
}

Result<hub::FetchRequest> make_request(const FetchArgs& args, const std::string& repo_text) {
  if (args.version.has_value() == args.revision.has_value()) {
    return fail(ErrorCode::invalid_argument, "give exactly one of --version or --revision");
  }
  if (args.version && *args.version < 0)
    return fail(ErrorCode::invalid_argument, "--version must be >= 0");
  auto repo = trust::RepoId::parse(repo_text);
  if (!repo) return fail(ErrorCode::invalid_argument, repo.error().message);
  hub::FetchRequest request;
  request.repo = *repo;
  request.version = args.version;
  request.revision = args.revision;
  request.variant = args.variant;
  request.all_variants = args.all_variants;
  request.platform.torch_version = args.torch_version;
  request.platform.backend = args.backend;
  return request;
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
  out["files"] = nlohmann::json::array();
  for (const auto& file : kernel.files) {
    out["files"].push_back({{"path", file.path}, {"size", file.size}, {"sha256", file.sha256}});
  }
  return out;
}

void print_variant_paths(const client::FetchedKernel& kernel) {
  for (const auto& v : kernel.variants) std::cout << variant_path(kernel, v) << "\n";
}

}  // namespace kernelhub::cli
