// `kernelhub ls [--cache-dir D] [--json]`: the kernel repos in the cache (the daemon's when
// one runs, unless --cache-dir names one), one row per cached variant, with its revision, refs,
// size, last use and pin.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
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

// When a variant was last used, as a UTC date-time (its publish time when it has no record).
std::string last_used(const nlohmann::json& variant) {
  const std::int64_t t = variant.value("last_used", std::int64_t{0});
  return t > 0 ? format_utc(t) : "-";
}

// Columns: REPO, REVISION (short sha), REFS, VARIANT, SIZE, LAST USED, PIN: one row per
// variant (its own blobs, shared ones included), so an operator sees what eviction would weigh.
void print_table(const std::string& root, const nlohmann::json& repos) {
  using Row = std::array<std::string, 7>;
  std::vector<Row> rows{{"REPO", "REVISION", "REFS", "VARIANT", "SIZE", "LAST USED", "PIN"}};
  std::uint64_t total = 0;
  for (const auto& repo : repos) {
    const std::string name = util::printable(repo.at("repo").get<std::string>());
    const std::uint64_t repo_size = repo.at("size_bytes");
    total += repo_size;
    if (repo.at("revisions").empty())
      rows.push_back({name, "-", "-", "-", format_bytes(repo_size), "-", "-"});
    for (const auto& rev : repo.at("revisions")) {
      const auto refs = shown(rev.at("refs").get<std::vector<std::string>>());
      const std::string commit = util::printable(rev.at("commit").get<std::string>().substr(0, 12));
      const std::string ref_text = refs.empty() ? "-" : util::join(refs, ",");
      const auto details = rev.value("variant_details", nlohmann::json::array());
      if (details.empty())
        rows.push_back({name, commit, ref_text, "-",
                        format_bytes(rev.at("size_bytes").get<std::uint64_t>()), "-", "-"});
      for (const auto& v : details) {
        rows.push_back({name, commit, ref_text, util::printable(v.value("name", "?")),
                        format_bytes(v.value("size_bytes", std::uint64_t{0})), last_used(v),
                        v.value("pinned", false) ? "pinned" : "-"});
      }
    }
  }
  std::array<std::size_t, 7> width{};
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      // Sizes right-aligned, everything else left-aligned.
      const std::string pad(width[i] - row[i].size(), ' ');
      line += i == 4 ? pad + row[i] : row[i] + (i + 1 < row.size() ? pad : "");
      if (i + 1 < row.size()) line += "  ";
    }
    std::cout << line << "\n";
  }
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
