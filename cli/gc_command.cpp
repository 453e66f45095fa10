// `kernelhub gc`: removes snapshots no ref points to (and no pin keeps), then, within bounds
// (--max-size, --min-free, --max-unused-age, else the policy's [cache]), the least recently
// used variants; then blobs nothing links. The daemon's cache when one runs; descriptors
// already handed out stay valid.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "client_options.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "kernelhub/cli/format_units.hpp"
#include "kernelhub/util/printable.hpp"
#include "kernelhub/util/quantity.hpp"

namespace kernelhub::cli {
namespace {

struct GcArgs {
  ClientArgs client;
  std::optional<std::string> max_size;
  std::optional<std::string> min_free;
  std::optional<std::string> max_unused_age;
  bool dry_run = false;
  bool json = false;
};

Result<client::GcOptions> gc_options(const GcArgs& args) {
  client::GcOptions options;
  options.dry_run = args.dry_run;
  auto& bounds = options.bounds;
  if (args.max_size) {
    KH_TRY_ASSIGN(bounds.max_size, util::parse_byte_size(*args.max_size));
  }
  if (args.min_free) {
    if (args.min_free->ends_with('%')) {
      KH_TRY_ASSIGN(bounds.min_free_percent, util::parse_percentage(*args.min_free));
    } else {
      KH_TRY_ASSIGN(bounds.min_free_bytes, util::parse_byte_size(*args.min_free));
    }
  }
  if (args.max_unused_age) {
    KH_TRY_ASSIGN(bounds.max_unused_age, util::parse_duration(*args.max_unused_age));
  }
  return options;
}

void print_report(const nlohmann::json& r) {
  const bool dry = r.value("dry_run", false);
  for (const auto& ev : r.value("evicted", nlohmann::json::array())) {
    const std::string variant = ev.value("variant", "");
    std::cout << (dry ? "would evict " : "evicted ") << util::printable(ev.value("repo", "?"))
              << "@" << util::printable(ev.value("commit", "?").substr(0, 12)) << " "
              << (variant.empty() ? "(snapshot)" : util::printable(variant)) << " ("
              << format_bytes(ev.value("size_bytes", std::uint64_t{0})) << ", last used "
              << format_utc(ev.value("last_used", std::int64_t{0}))
              << "): " << util::printable(ev.value("reason", "")) << "\n";
  }
  for (const auto& skipped : r.value("skipped", nlohmann::json::array()))
    std::cout << "left alone: " << util::printable(skipped.get<std::string>()) << "\n";
  if (dry) {
    std::cout << "dry run: would free " << format_bytes(r.value("freed_bytes", std::uint64_t{0}))
              << " of " << format_bytes(r.value("cache_bytes", std::uint64_t{0})) << "\n";
  } else {
    std::cout << "removed " << r.value("removed_snapshots", 0) << " snapshots and "
              << r.value("removed_blobs", 0) << " blobs, freed "
              << format_bytes(r.value("freed_bytes", std::uint64_t{0})) << "\n";
  }
  if (!r.value("within_bounds", true)) {
    const bool left_alone = !r.value("skipped", nlohmann::json::array()).empty();
    std::cout << "the cache stays over its bounds: "
              << format_bytes(r.value("pinned_bytes", std::uint64_t{0}))
              << " are pinned (`kernelhub pin --list`)"
              << (left_alone ? ", and the repos above were left alone" : "") << "\n";
  }
}

int run_gc(const GcArgs& args) {
  auto options = gc_options(args);
  if (!options) return report(options.error());
  auto client = open_client(args.client);
  if (!client) return report(client.error());
  auto result = client->gc(*options);
  if (!result) return report(result.error());
  if (args.json) {
    std::cout << result->dump(2) << "\n";
  } else {
    print_report(*result);
  }
  return 0;
}

}  // namespace

void register_gc(CLI::App& app, Action& action) {
  auto args = std::make_shared<GcArgs>();
  auto* cmd = app.add_subcommand(
      "gc", "Remove unreferenced snapshots, then least recently used variants down to bounds");
  add_client_options(*cmd, args->client, /*with_policy=*/true);
  cmd->add_option("--max-size", args->max_size,
                  "Evict until the cache holds at most this much (10GiB, 500M, bytes)");
  cmd->add_option("--min-free", args->min_free,
                  "Evict until its file system has this much free (a size, or 10%)");
  cmd->add_option("--max-unused-age", args->max_unused_age,
                  "Evict what was not used for this long (30d, 12h)");
  cmd->add_flag("--dry-run", args->dry_run, "Say what would go; remove nothing");
  cmd->add_flag("--json", args->json, "Machine-readable output (sizes in bytes)");
  cmd->callback([args, &action] { action = [args] { return run_gc(*args); }; });
}

}  // namespace kernelhub::cli
