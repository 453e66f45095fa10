// The flags `download` and `prefetch` share, the request they describe, and the JSON and
// path output both print for a fetched kernel.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "client_options.hpp"
#include "kernelhub/client/client.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/trust/lockfile.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace kernelhub::cli {

struct FetchArgs {
  std::optional<std::string> lockfile;  // every entry at its locked commit
  std::optional<std::string> mapping;   // every kernel a layer mapping file names
  std::optional<int> version;
  std::optional<std::string> revision;
  std::optional<std::string> variant;
  bool all_variants = false;
  std::optional<std::string> torch_version;
  std::optional<std::string> backend;
  bool json = false;
  ClientArgs client;
};

// --lockfile/--mapping/--version/--revision/--variant/--all-variants/--torch-version/
// --backend/--json plus the client options. `repos` is the command's positional argument,
// which --lockfile and --mapping replace.
void add_fetch_options(CLI::App& cmd, FetchArgs& args, CLI::Option* repos);

Result<fetch::Request> make_request(const FetchArgs& args, const std::string& repo);
// --lockfile, parsed; a lock without entries is malformed_lockfile.
Result<trust::Lockfile> read_args_lockfile(const FetchArgs& args);
// The request for one lockfile entry: its repo at its locked commit (legacy entries with
// their variant hashes), the variant flags as given.
Result<fetch::Request> make_locked_request(const FetchArgs& args, const trust::LockEntry& entry);

// Every entry of --lockfile, through fetch_each.
int fetch_locked(const FetchArgs& args, bool prefetch);

// Every kernel of --mapping: hub entries at their version or revision, locked entries at
// their locked commit, through fetch_each.
int fetch_mapped(const FetchArgs& args, bool prefetch);

// Fetches (or prefetches) each request in turn through one client, printing paths or one
// JSON array; every request is tried, the exit code is the first failure's.
int fetch_each(const FetchArgs& args, const std::vector<fetch::Request>& requests, bool prefetch);

// {"repo","commit","variants","variant"?,"path","snapshot","from_cache","via_daemon",
// "cache_fallback" (null, or the Hub error that made a fetch serve the cache),"files"}
nlohmann::json fetched_to_json(const client::FetchedKernel& kernel);
// The notices beside the files, on stderr: a refused vN move kernelhubd reported (in-process
// fetches log it themselves), and [signatures] warnings from either mode.
void print_fetch_warnings(const client::FetchedKernel& kernel);
// One line per variant: <snapshot>/build/<variant>.
void print_variant_paths(const client::FetchedKernel& kernel);

}  // namespace kernelhub::cli
