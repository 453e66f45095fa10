// `kernelhub ls [--cache-dir D] [--json]`: the kernel repos in the cache, one row per cached
// revision, with its refs, build variants and size.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cache/kernel_cache.hpp"
#include "client/cli/commands.hpp"
#include "client/cli/format_units.hpp"

namespace kernelhub::cli {
namespace {

struct LsArgs {
  std::string cache_dir;
  bool json = false;
};

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

nlohmann::json to_json(const std::filesystem::path& root, const std::vector<cache::CachedRepo>& repos) {
  auto list = nlohmann::json::array();
  for (const auto& repo : repos) {
    auto revisions = nlohmann::json::array();
    for (const auto& rev : repo.revisions) {
      revisions.push_back({{"commit", rev.commit},
                           {"refs", rev.refs},
                           {"variants", rev.variants},
                           {"size_bytes", rev.size_bytes}});
    }
    list.push_back({{"repo", repo.repo.str()},
                    {"path", repo.path.string()},
                    {"size_bytes", repo.size_bytes},
                    {"revisions", std::move(revisions)}});
  }
  return {{"cache_dir", root.string()}, {"repos", std::move(list)}};
}

// Columns: REPO, REVISION (short sha), REFS, SIZE, VARIANTS; a revision with several
// variants continues on indented lines so each variant name stays whole.
void print_table(const std::filesystem::path& root, const std::vector<cache::CachedRepo>& repos) {
  struct Row {
    std::string repo, revision, refs, size;
    std::vector<std::string> variants;
  };
  std::vector<Row> rows;
  std::uint64_t total = 0;
  for (const auto& repo : repos) {
    total += repo.size_bytes;
    if (repo.revisions.empty()) rows.push_back({repo.repo.str(), "-", "-", format_bytes(repo.size_bytes), {}});
    for (const auto& rev : repo.revisions) {
      rows.push_back({repo.repo.str(), rev.commit.substr(0, 12), rev.refs.empty() ? "-" : join(rev.refs, ","),
                      format_bytes(rev.size_bytes), rev.variants});
    }
  }
  Row header{"REPO", "REVISION", "REFS", "SIZE", {"VARIANTS"}};
  std::size_t w_repo = header.repo.size(), w_rev = header.revision.size(), w_refs = header.refs.size(),
              w_size = header.size.size();
  for (const auto& r : rows) {
    w_repo = std::max(w_repo, r.repo.size());
    w_rev = std::max(w_rev, r.revision.size());
    w_refs = std::max(w_refs, r.refs.size());
    w_size = std::max(w_size, r.size.size());
  }
  const auto print_row = [&](const Row& r) {
    const auto pad = [](const std::string& s, std::size_t w) { return s + std::string(w - s.size() + 2, ' '); };
    std::cout << pad(r.repo, w_repo) << pad(r.revision, w_rev) << pad(r.refs, w_refs)
              << std::string(w_size - r.size.size(), ' ') << r.size << "  "
              << (r.variants.empty() ? "-" : r.variants.front()) << "\n";
    const std::string indent(w_repo + w_rev + w_refs + w_size + 8, ' ');
    for (std::size_t i = 1; i < r.variants.size(); ++i) std::cout << indent << r.variants[i] << "\n";
  };
  print_row(header);
  for (const auto& r : rows) print_row(r);
  std::cout << "\n" << repos.size() << (repos.size() == 1 ? " repo, " : " repos, ") << format_bytes(total)
            << " in " << root.string() << "\n";
}

int run_ls(const LsArgs& args) {
  const std::filesystem::path root = args.cache_dir.empty()
                                         ? cache::resolve_cache_root(trust::Environment::from_process())
                                         : std::filesystem::path(args.cache_dir);
  const cache::KernelCache cache(root);
  auto repos = cache.list();
  if (!repos) {
    std::cerr << "kernelhub ls: " << repos.error().message << "\n";
    return 1;
  }
  if (args.json) {
    std::cout << to_json(root, *repos).dump(2) << "\n";
  } else if (repos->empty()) {
    std::cout << "No kernels cached in " << root.string() << " yet (fetch one with `kernelhub download`).\n";
  } else {
    print_table(root, *repos);
  }
  return 0;
}

void register_ls(CLI::App& app, Action& action) {
  auto args = std::make_shared<LsArgs>();
  auto* cmd = app.add_subcommand("ls", "List cached kernel repos, revisions, variants and sizes");
  cmd->add_option("--cache-dir", args->cache_dir, "Cache root (default: KERNELS_CACHE, HF_HUB_CACHE, ...)");
  cmd->add_flag("--json", args->json, "Machine-readable output (sizes in bytes)");
  cmd->callback([args, &action] { action = [args] { return run_ls(*args); }; });
}

}  // namespace

KH_REGISTER_COMMAND(register_ls);

}  // namespace kernelhub::cli
