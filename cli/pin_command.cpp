// `kernelhub pin` / `unpin`: what production needs, kept through every eviction (the
// daemon's cache when one runs; there, who may pin follows the import rule).
//   kernelhub pin ORG/NAME (--revision R | --version N) [--variant V]...
//   kernelhub pin --lockfile kernels.lock      (every locked commit, its locked variants)
//   kernelhub pin --mapping layers.toml        (every kernel a layer mapping names)
//   kernelhub pin --list [--json]
//   kernelhub unpin ORG/NAME [--revision R | --version N]   /   unpin --lockfile kernels.lock
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <memory>

#include "client_options.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "kernelhub/cli/format_units.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/printable.hpp"
#include "kernelhub/util/strings.hpp"
#include "mapping_kernels.hpp"

namespace kernelhub::cli {
namespace {

struct PinArgs {
  ClientArgs client;
  std::optional<std::string> repo;
  std::optional<std::string> revision;
  std::optional<int> version;
  std::vector<std::string> variants;
  std::optional<std::string> lockfile;
  std::optional<std::string> mapping;
  bool list = false;
  bool json = false;
};

// What one pin or unpin names: (repo, revision) pairs with their variants and source.
struct Target {
  trust::RepoId repo;
  std::optional<std::string> revision;
  std::vector<std::string> variants;
  std::string source;
};

Result<std::vector<Target>> targets(const PinArgs& args, bool pinning) {
  std::vector<Target> out;
  if (args.lockfile) {
    if (args.repo || args.revision || args.version || !args.variants.empty())
      return fail(ErrorCode::invalid_argument,
                  "--lockfile names the repos itself: no ORG/NAME, --revision, --version or "
                  "--variant with it");
    KH_TRY_ASSIGN(const auto lock, trust::read_lockfile(*args.lockfile));
    const std::string source =
        "kernels.lock " + std::filesystem::absolute(*args.lockfile).lexically_normal().string();
    for (const auto& entry : lock.entries) {
      Target t{entry.repo, entry.commit, {}, source};
      for (const auto& [variant, hash] : entry.variant_hashes) t.variants.push_back(variant);
      out.push_back(std::move(t));
    }
    return out;
  }
  if (args.mapping) {
    if (args.repo || args.revision || args.version || !args.variants.empty() || args.lockfile)
      return fail(ErrorCode::invalid_argument,
                  "--mapping names the kernels itself: no ORG/NAME, --revision, --version, "
                  "--variant or --lockfile with it");
    KH_TRY_ASSIGN(const auto mapped,
                  read_mapping_kernels(*args.mapping, util::Environment::from_process()));
    const std::string source =
        "mapping " + std::filesystem::absolute(*args.mapping).lexically_normal().string();
    for (const auto& kernel : mapped.kernels) {
      Target t{kernel.repo, std::nullopt, {}, source};
      if (kernel.locked) {
        t.revision = kernel.locked->commit;
        for (const auto& [variant, hash] : kernel.locked->variant_hashes)
          t.variants.push_back(variant);
      } else {
        t.revision = kernel.ref->ref_name();
      }
      out.push_back(std::move(t));
    }
    return out;
  }
  if (!args.repo)
    return fail(ErrorCode::invalid_argument,
                "name a repo ORG/NAME, or --lockfile, or --mapping, or --list");
  KH_TRY_ASSIGN(auto repo, trust::RepoId::parse(*args.repo));
  if (args.revision && args.version)
    return fail(ErrorCode::invalid_argument, "--revision and --version exclude each other");
  std::optional<std::string> revision = args.revision;
  if (args.version) revision = "v" + std::to_string(*args.version);
  if (pinning && !revision)
    return fail(ErrorCode::invalid_argument,
                "say what to pin: --version N or --revision R (a commit or a cached ref)");
  out.push_back({std::move(repo), revision, args.variants,
                 revision ? "revision " + *revision : std::string()});
  return out;
}

void print_pins(const nlohmann::json& repos) {
  if (repos.empty()) {
    std::cout << "no pins\n";
    return;
  }
  for (const auto& repo : repos) {
    const std::string name = util::printable(repo.value("repo", "?"));
    if (repo.contains("error")) {
      std::cout << name << ": pins unreadable (" << util::printable(repo.value("error", ""))
                << "): the whole repo is kept until `kernelhub unpin " << name << "`\n";
      continue;
    }
    for (const auto& pin : repo.value("pins", nlohmann::json::array())) {
      const auto variants = pin.value("variants", std::vector<std::string>{});
      std::cout << name << "@" << util::printable(pin.value("commit", "?").substr(0, 12)) << "  "
                << (variants.empty() ? "all variants" : util::printable(util::join(variants, ",")))
                << "  "
                << (pin.value("cached", false)
                        ? format_bytes(pin.value("size_bytes", std::uint64_t{0}))
                        : std::string("not cached"))
                << "  " << util::printable(pin.value("source", "")) << " (by "
                << util::printable(pin.value("pinned_by", "?")) << ", "
                << format_utc(pin.value("pinned_at", std::int64_t{0})) << ")\n";
    }
  }
}

int run_pin(const PinArgs& args, bool pinning) {
  auto client = open_client(args.client);
  if (!client) return report(client.error());
  Result<nlohmann::json> last = args.list ? client->pins() : nlohmann::json::object();
  if (!args.list) {
    auto wanted = targets(args, pinning);
    if (!wanted) return report(wanted.error());
    std::uint64_t removed = 0;
    for (const auto& t : *wanted) {
      last = pinning ? client->pin({t.repo, *t.revision, t.variants, t.source})
                     : client->unpin(t.repo, t.revision);
      if (!last) return report(last.error());
      removed += last->value("removed", std::uint64_t{0});
      if (!args.json && pinning) {
        std::cout << "pinned " << t.repo.str() << " " << util::printable(*t.revision) << " ("
                  << (t.variants.empty() ? "all variants" : util::join(t.variants, ",")) << ")\n";
      }
    }
    if (!args.json && !pinning) std::cout << "removed " << removed << " pin(s)\n";
  }
  if (!last) return report(last.error());
  if (args.json) {
    std::cout << last->dump(2) << "\n";
  } else if (args.list) {
    print_pins(last->value("repos", nlohmann::json::array()));
  }
  return 0;
}

void add_target_options(CLI::App& cmd, PinArgs& args) {
  cmd.add_option("repo", args.repo, "Kernel repository ORG/NAME");
  cmd.add_option("--revision", args.revision, "A commit (40 hex) or a ref the cache holds");
  cmd.add_option("--version", args.version, "The version branch vN the cache holds");
  cmd.add_option("--lockfile", args.lockfile, "Every kernel a kernels.lock names, at its commit");
  cmd.add_option("--mapping", args.mapping,
                 "Every kernel a layer mapping file names (hub entries at their version or "
                 "revision, locked ones at their commit)");
  add_client_options(cmd, args.client, /*with_policy=*/true);
  cmd.add_flag("--json", args.json, "Machine-readable output: the pins after the change");
}

}  // namespace

void register_pin(CLI::App& app, Action& action) {
  auto args = std::make_shared<PinArgs>();
  auto* cmd =
      app.add_subcommand("pin", "Keep kernels through every eviction (pin --list: the pins)");
  add_target_options(*cmd, *args);
  cmd->add_option("--variant", args->variants, "Only these variants (repeat; default: all)");
  cmd->add_flag("--list", args->list, "List the pins with their sizes");
  cmd->callback([args, &action] { action = [args] { return run_pin(*args, true); }; });
}

void register_unpin(CLI::App& app, Action& action) {
  auto args = std::make_shared<PinArgs>();
  auto* cmd = app.add_subcommand("unpin", "Remove pins (of one revision, or every pin of a repo)");
  add_target_options(*cmd, *args);
  cmd->callback([args, &action] { action = [args] { return run_pin(*args, false); }; });
}

}  // namespace kernelhub::cli
