// `kernelhub ls [--cache-dir D] [--json]`: the kernel repos in the cache (the daemon's when
// one runs, unless --cache-dir names one), one row per cached revision, with its refs, build
// variants and size.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "client_options.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "kernelhub/cli/format_units.hpp"
#include "kernelhub/util/printable.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::cli {
namespace {

struct LsArgs {
  ClientArgs client;
  bool json = false;
};

// The cache's names as shown: escaped (util::printable), since anyone who can write a
// folder into a shared cache chooses them.
std::vector<std::string> shown(std::vector<std::string> items) {
  for (auto& item : items) item = util::printable(item);
  return items;
}

// Columns: REPO, REVISION (short sha), REFS, SIZE, VARIANTS; a revision with several
// variants continues on indented lines so each variant name stays whole.
void print_table(const std::string& root, const nlohmann::json& repos) {
  struct Row {
    std::string repo, revision, refs, size;
    std::vector<std::string> variants;
  };
  std::vector<Row> rows;
  std::uint64_t total = 0;
  for (const auto& repo : repos) {
    const std::string name = util::printable(repo.at("repo").get<std::string>());
    const std::uint64_t repo_size = repo.at("size_bytes");
    total += repo_size;
    if (repo.at("revisions").empty()) rows.push_back({name, "-", "-", format_bytes(repo_size), {}});
    for (const auto& rev : repo.at("revisions")) {
      const auto refs = shown(rev.at("refs").get<std::vector<std::string>>());
      rows.push_back({name, util::printable(rev.at("commit").get<std::string>().substr(0, 12)),
                      refs.empty() ? "-" : util::join(refs, ","),
                      format_bytes(rev.at("size_bytes").get<std::uint64_t>()),
                      shown(rev.at("variants").get<std::vector<std::string>>())});
    }
  }
  Row header{"REPO", "REVISION", "REFS", "SIZE", {"VARIANTS"}};
  std::size_t w_repo = header.repo.size(), w_rev = header.revision.size(),
              w_refs = header.refs.size(), w_size = header.size.size();
  for (const auto& r : rows) {
    w_repo = std::max(w_repo, r.repo.size());
    w_rev = std::max(w_rev, r.revision.size());
    w_refs = std::max(w_refs, r.refs.size());
    w_size = std::max(w_size, r.size.size());
  }
  const auto print_row = [&](const Row& r) {
    const auto pad = [](const std::string& s, std::size_t w) {
      return s + std::string(w - s.size() + 2, ' ');
    };
    std::cout << pad(r.repo, w_repo) << pad(r.revision, w_rev) << pad(r.refs, w_refs)
              << std::string(w_size - r.size.size(), ' ') << r.size << "  "
              << (r.variants.empty() ? "-" : r.variants.front()) << "\n";
    const std::string indent(w_repo + w_rev + w_refs + w_size + 8, ' ');
    for (std::size_t i = 1; i < r.variants.size(); ++i)
      std::cout << indent << r.variants[i] << "\n";
  };
  print_row(header);
  for (const auto& r : rows) print_row(r);
  std::cout << "\n"
            << repos.size() << (repos.size() == 1 ? " repo, " : " repos, ") << format_bytes(total)
            << " in " << util::printable(root) << "\n";
}

int run_ls(const LsArgs& args) {
  auto client = open_client(args.client);
  if (!client) return report(client.error());
  auto listing = client->ls();
  if (!listing) return report(listing.error());
  auto status = client->status();
  if (!status) return report(status.error());
  const std::string root = status->value("cache_root", "");
  const auto& repos = listing->at("repos");
  if (args.json) {
    std::cout << nlohmann::json{{"cache_dir", root},
                                {"via_daemon", client->via_daemon()},
                                {"repos", repos}}
                     .dump(2)
              << "\n";
  } else if (repos.empty()) {
    std::cout << "No kernels cached in " << util::printable(root)
              << " yet (fetch one with `kernelhub download`).\n";
  } else {
    print_table(root, repos);
  }
  return 0;
}

}  // namespace

void register_ls(CLI::App& app, Action& action) {
  auto args = std::make_shared<LsArgs>();
  auto* cmd = app.add_subcommand("ls", "List cached kernel repos, revisions, variants and sizes");
  add_client_options(*cmd, args->client, /*with_policy=*/false);
  cmd->add_flag("--json", args->json, "Machine-readable output (sizes in bytes)");
  cmd->callback([args, &action] { action = [args] { return run_ls(*args); }; });
}

}  // namespace kernelhub::cli
