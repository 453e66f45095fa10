#include "fetch_args.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

#include "exit_codes.hpp"
#include "kernelhub/cli/progress_bar.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/printable.hpp"
#include "mapping_kernels.hpp"

namespace kernelhub::cli {

void add_fetch_options(CLI::App& cmd, FetchArgs& args, CLI::Option* repos) {
  auto* lockfile = cmd.add_option("--lockfile", args.lockfile,
                                  "Fetch every kernel of this kernels.lock at its locked commit");
  auto* version = cmd.add_option("--version", args.version, "Major version (branch vN)");
  auto* revision = cmd.add_option("--revision", args.revision, "Branch, tag or commit sha");
  version->excludes(revision);
  lockfile->excludes(version)->excludes(revision)->excludes(repos);
  auto* mapping = cmd.add_option("--mapping", args.mapping,
                                 "Every kernel a layer mapping file (TOML or JSON) names");
  mapping->excludes(version)->excludes(revision)->excludes(repos)->excludes(lockfile);
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

// `repo` at `ref`, the variant flags as given.
Result<fetch::Request> make_ref_request(const FetchArgs& args, trust::RepoId repo, fetch::Ref ref) {
  fetch::Request request(std::move(repo), std::move(ref));
  KH_TRY(apply_variant_options(args, request));
  return request;
}

}  // namespace

Result<fetch::Request> make_request(const FetchArgs& args, const std::string& repo_text) {
  KH_TRY_ASSIGN(auto ref,
                fetch::Ref::one_of(args.version, args.revision, "--version or --revision"));
  auto repo = trust::RepoId::parse(repo_text);
  if (!repo) return fail(ErrorCode::invalid_argument, repo.error().message);
  return make_ref_request(args, std::move(*repo), std::move(ref));
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

int fetch_mapped(const FetchArgs& args, bool prefetch) {
  auto mapped = read_mapping_kernels(*args.mapping, util::Environment::from_process());
  if (!mapped) return report(mapped.error());
  std::vector<fetch::Request> requests;
  for (const auto& kernel : mapped->kernels) {
    auto request = kernel.locked ? make_locked_request(args, *kernel.locked)
                                 : make_ref_request(args, kernel.repo, *kernel.ref);
    if (!request) return report(request.error());
    requests.push_back(std::move(*request));
  }
  if (mapped->local > 0) {
    std::cerr << "kernelhub: " << mapped->local
              << " local build(s) in the mapping need nothing from the Hub\n";
  }
  if (requests.empty()) {
    return report(Error{ErrorCode::invalid_argument, *args.mapping + " maps no hub kernel"});
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
std::string variant_path(const fetch::Manifest& manifest, const std::string& variant) {
  return (manifest.snapshot_path / "build" / variant).string();
}

nlohmann::json note_or_null(const std::string& note) {
  return note.empty() ? nlohmann::json(nullptr) : nlohmann::json(note);
}
}  // namespace

nlohmann::json fetched_to_json(const client::FetchedKernel& kernel) {
  const fetch::Manifest& manifest = kernel.manifest;
  nlohmann::json out;
  out["repo"] = manifest.repo.str();
  out["commit"] = manifest.commit;
  out["variants"] = manifest.variants;
  if (manifest.variants.size() == 1) {
    out["variant"] = manifest.variants.front();
    out["path"] = variant_path(manifest, manifest.variants.front());
  } else {
    out["path"] = manifest.snapshot_path.string();
  }
  out["snapshot"] = manifest.snapshot_path.string();
  out["from_cache"] = manifest.from_cache;
  out["via_daemon"] = kernel.via_daemon;
  // Why the Hub was not used and the cached snapshot was served instead; null normally.
  out["cache_fallback"] = note_or_null(manifest.cache_fallback);
  // The vN move the rollback guard refused (the accepted commit was served); null normally.
  out["refused_move"] = note_or_null(manifest.refused_move);
  // [signatures] warn mode: variants served although their signature does not hold.
  out["signature_warnings"] = manifest.signature_warnings;
  out["files"] = nlohmann::json::array();
  for (const auto& file : manifest.files) {
    out["files"].push_back({{"path", file.path}, {"size", file.size}, {"sha256", file.sha256}});
  }
  return out;
}

void print_fetch_warnings(const client::FetchedKernel& kernel) {
  const fetch::Manifest& manifest = kernel.manifest;
  if (kernel.via_daemon && !manifest.refused_move.empty()) {
    std::cerr << "kernelhub: warning: " << util::printable(manifest.refused_move) << "\n";
  }
  for (const auto& warning : manifest.signature_warnings) {
    std::cerr << "kernelhub: warning: " << util::printable(warning) << "\n";
  }
}

void print_variant_paths(const client::FetchedKernel& kernel) {
  for (const auto& v : kernel.manifest.variants) {
    std::cout << util::printable(variant_path(kernel.manifest, v)) << "\n";
  }
}

}  // namespace kernelhub::cli
