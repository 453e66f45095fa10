// `kernelhub lock [PROJECT_DIR | --mapping FILE] [--format kernels|legacy] [-o FILE]`:
// resolves the project's [tool.kernels.dependencies] (pyproject.toml, else kernelhub.toml),
// or the kernels a layer mapping file names, and their transitive kernel dependencies to
// commits and writes kernels.lock, byte for byte what `kernels lock` writes. Asks the Hub directly
// (the daemon caches files, not locks).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "client_options.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "kernelhub/hub/http.hpp"
#include "kernelhub/hub/hub_config.hpp"
#include "kernelhub/hub/locker.hpp"
#include "kernelhub/trust/layer_mapping.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/trust/project_manifest.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/fs_util.hpp"

namespace kernelhub::cli {
namespace {

struct LockArgs {
  std::string project_dir = ".";
  std::optional<std::string> mapping;
  trust::LockFormat format = trust::LockFormat::kernels;
  std::optional<std::string> output;
  std::optional<std::string> policy;
};

// The kernels to lock: the project's dependencies, or a mapping file's hub entries (its
// locked entries are locked already, its local builds need no lock).
Result<std::vector<trust::KernelDependency>> dependencies_of(const LockArgs& args) {
  if (!args.mapping) return trust::read_project_dependencies(args.project_dir);
  KH_TRY_ASSIGN(const auto mapping, trust::read_layer_mapping(*args.mapping));
  auto mapped = trust::mapped_kernels(mapping);
  if (mapped.hub.empty()) {
    return fail(ErrorCode::invalid_argument,
                *args.mapping + " maps no kernel at a version or revision: nothing to lock");
  }
  if (!mapped.locked.empty()) {
    std::cerr << "kernelhub: " << mapped.locked.size()
              << " locked kernel(s) of the mapping keep the commits their lockfile pins\n";
  }
  return std::move(mapped.hub);
}

int run_lock(const LockArgs& args) {
  auto dependencies = dependencies_of(args);
  if (!dependencies) return report(dependencies.error());
  const auto env = util::Environment::from_process();
  auto policy = load_admin_policy(args.policy, env);
  if (!policy) return report(policy.error());
  const auto config = hub::HubConfig::from(env);
  if (config.offline) {
    return report(Error{ErrorCode::offline_not_cached,
                        "locking asks the Hub for the commits; unset HF_HUB_OFFLINE"});
  }
  hub::CurlHttpClient http(config);
  hub::Locker locker(config, http, std::move(*policy), trust::TrustEnvironment::from(env));
  auto lock = locker.lock(*dependencies, args.format);
  if (!lock) return report(lock.error());
  auto text = trust::write_lockfile(*lock, args.format);
  if (!text) return report(text.error());

  const std::filesystem::path beside = args.mapping
                                           ? std::filesystem::path(*args.mapping).parent_path()
                                           : std::filesystem::path(args.project_dir);
  const std::filesystem::path out = std::filesystem::absolute(
      args.output ? std::filesystem::path(*args.output) : beside / "kernels.lock");
  if (auto written = util::write_file_atomic(out, *text, 0644); !written) {
    return report(written.error());
  }
  std::cerr << "kernelhub: locked " << lock->entries.size() << " kernel(s) in " << out.string()
            << "\n";
  return 0;
}

}  // namespace

void register_lock(CLI::App& app, Action& action) {
  auto args = std::make_shared<LockArgs>();
  auto* cmd = app.add_subcommand(
      "lock", "Pin a project's kernels (and what they depend on) to commits in kernels.lock");
  cmd->footer(kExitCodes);
  auto* project =
      cmd->add_option("project_dir", args->project_dir,
                      "Project with pyproject.toml or kernelhub.toml [tool.kernels.dependencies]")
          ->capture_default_str();
  cmd->add_option("--mapping", args->mapping,
                  "Lock the kernels a layer mapping file names instead (default output: "
                  "kernels.lock beside it)")
      ->excludes(project);
  const std::map<std::string, trust::LockFormat> formats = {{"kernels", trust::LockFormat::kernels},
                                                            {"legacy", trust::LockFormat::legacy}};
  cmd->add_option("--format", args->format,
                  "kernels (0.17+, the default) or legacy (<= 0.16, with per-variant hashes)")
      ->transform(CLI::CheckedTransformer(formats, CLI::ignore_case));
  cmd->add_option("-o,--output", args->output,
                  "Lockfile to write (default PROJECT_DIR/kernels.lock)");
  cmd->add_option("--policy", args->policy, "Admin trust policy file (default: $KERNELHUB_POLICY)");
  cmd->callback([args, &action] { action = [args] { return run_lock(*args); }; });
}

}  // namespace kernelhub::cli
