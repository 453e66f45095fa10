// `kernelhub download ORG/NAME (--version N | --revision REV) ...`: runs the fetch pipeline
// in-process against the user's cache and prints where the variant landed.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <optional>

#include "cache/kernel_cache.hpp"
#include "client/cli/commands.hpp"
#include "hub/fetcher.hpp"
#include "trust/environment.hpp"
#include "trust/policy.hpp"

#if __has_include("client/cli/progress_bar.hpp")
#include "client/cli/progress_bar.hpp"
#define KH_HAVE_PROGRESS_BAR 1
#endif

namespace kernelhub::cli {
namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 ok; 1 other error; 2 bad arguments or policy file; 3 publisher not trusted or "
    "remote code disabled; 4 repo/revision/version/file not found (or no access); 5 no matching "
    "build variant; 6 network, timeout, rate limit, Hub error or offline without a cached copy; "
    "7 integrity failure (hash/size mismatch, oversized or malformed response, unsafe path); 8 disk full.";

struct DownloadArgs {
  std::string repo;
  std::optional<int> version;
  std::optional<std::string> revision;
  std::optional<std::string> variant;
  bool all_variants = false;
  std::optional<std::string> cache_dir;
  std::optional<std::string> torch_version;
  std::optional<std::string> backend;
  std::optional<std::string> policy;
  bool json = false;
};

int exit_code_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
    case ErrorCode::policy:
      return 2;
    case ErrorCode::untrusted_publisher:
    case ErrorCode::remote_code_disabled:
      return 3;
    case ErrorCode::repo_not_found:
    case ErrorCode::revision_not_found:
    case ErrorCode::version_not_found:
    case ErrorCode::entry_not_found:
    case ErrorCode::gated:
    case ErrorCode::unauthorized:
      return 4;
    case ErrorCode::no_matching_variant:
      return 5;
    case ErrorCode::network:
    case ErrorCode::timeout:
    case ErrorCode::offline_not_cached:
    case ErrorCode::rate_limited:
    case ErrorCode::http_status:
      return 6;
    case ErrorCode::hash_mismatch:
    case ErrorCode::size_mismatch:
    case ErrorCode::too_large:
    case ErrorCode::malformed_response:
    case ErrorCode::unsafe_path:
      return 7;
    case ErrorCode::disk_full:
      return 8;
    default:
      return 1;
  }
}

int report(const Error& error) {
  std::string message = error.message;
  for (auto& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::cerr << "kernelhub: " << to_string(error.code) << ": " << message << "\n";
  return exit_code_for(error.code);
}

void print_result(const hub::FetchResult& result, bool json) {
  const auto variant_path = [&](const std::string& v) { return (result.snapshot_path / "build" / v).string(); };
  if (!json) {
    for (const auto& v : result.variants) std::cout << variant_path(v) << "\n";
    return;
  }
  nlohmann::json out;
  out["repo"] = result.repo.str();
  out["commit"] = result.commit;
  out["variants"] = result.variants;
  if (result.variants.size() == 1) {
    out["variant"] = result.variants.front();
    out["path"] = variant_path(result.variants.front());
  } else {
    out["path"] = result.snapshot_path.string();
  }
  out["snapshot"] = result.snapshot_path.string();
  out["from_cache"] = result.from_cache;
  out["files"] = nlohmann::json::array();
  for (const auto& file : result.files) {
    out["files"].push_back({{"path", file.path}, {"size", file.size}, {"sha256", file.sha256}});
  }
  std::cout << out.dump(2) << "\n";
}

int run_download(const DownloadArgs& args) {
  if (args.version.has_value() == args.revision.has_value()) {
    return report({ErrorCode::invalid_argument, "give exactly one of --version or --revision"});
  }
  if (args.version && *args.version < 0) return report({ErrorCode::invalid_argument, "--version must be >= 0"});
  auto repo = trust::RepoId::parse(args.repo);
  if (!repo) return report({ErrorCode::invalid_argument, repo.error().message});

  const auto env = trust::Environment::from_process();
  trust::AdminPolicy policy;
  const auto policy_file = args.policy ? args.policy : env.get("KERNELHUB_POLICY");
  if (policy_file) {
    auto loaded = trust::load_policy_file(*policy_file);
    if (!loaded) return report(loaded.error());
    policy = std::move(*loaded);
  }
  const auto config = hub::HubConfig::from(env);
  cache::KernelCache cache(args.cache_dir ? std::filesystem::path(*args.cache_dir) : cache::resolve_cache_root(env));
  hub::CurlHttpClient http(config);
  hub::Fetcher fetcher(config, http, cache, policy, trust::TrustEnvironment::from(env), env);

  hub::FetchRequest request;
  request.repo = *repo;
  request.version = args.version;
  request.revision = args.revision;
  request.variant = args.variant;
  request.all_variants = args.all_variants;
  request.platform.torch_version = args.torch_version;
  request.platform.backend = args.backend;

  hub::ProgressCallback on_progress;
#ifdef KH_HAVE_PROGRESS_BAR
  auto bar = std::make_shared<ProgressBar>();
  on_progress = [bar](const hub::FetchProgress& p) { bar->update(p); };
#endif
  auto result = fetcher.fetch(request, on_progress);
#ifdef KH_HAVE_PROGRESS_BAR
  bar->finish();
#endif
  if (!result) return report(result.error());
  print_result(*result, args.json);
  return 0;
}

void register_download(CLI::App& app, Action& action) {
  auto args = std::make_shared<DownloadArgs>();
  auto* cmd = app.add_subcommand("download", "Download a kernel's build variant into the cache (verified)");
  cmd->footer(kExitCodes);
  cmd->add_option("repo", args->repo, "Kernel repository ORG/NAME")->required();
  auto* version = cmd->add_option("--version", args->version, "Major version (branch vN)");
  auto* revision = cmd->add_option("--revision", args->revision, "Branch, tag or commit sha");
  version->excludes(revision);
  auto* variant = cmd->add_option("--variant", args->variant, "Exact build variant (folder under build/)");
  auto* all = cmd->add_flag("--all-variants", args->all_variants, "Download every build variant");
  variant->excludes(all);
  cmd->add_option("--cache-dir", args->cache_dir, "Cache root (default: KERNELS_CACHE, HF_HUB_CACHE, ...)");
  cmd->add_option("--torch-version", args->torch_version, "Torch version to select for, e.g. 2.15");
  cmd->add_option("--backend", args->backend, "Backend to select for: cpu, cuda, cu132, ...");
  cmd->add_option("--policy", args->policy, "Admin trust policy file (default: $KERNELHUB_POLICY)");
  cmd->add_flag("--json", args->json, "Print a JSON description instead of the path");
  cmd->callback([args, &action] { action = [args] { return run_download(*args); }; });
}

}  // namespace

KH_REGISTER_COMMAND(register_download);

}  // namespace kernelhub::cli
