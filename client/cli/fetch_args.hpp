// The flags `download` and `prefetch` share, the request they describe, and the JSON and
// path output both print for a fetched kernel.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "client/cli/client_options.hpp"
#include "client/client.hpp"
#include "hub/fetcher.hpp"

namespace CLI {
class App;
}

namespace kernelhub::cli {

struct FetchArgs {
  std::optional<int> version;
  std::optional<std::string> revision;
  std::optional<std::string> variant;
  bool all_variants = false;
  std::optional<std::string> torch_version;
  std::optional<std::string> backend;
  bool json = false;
  ClientArgs client;
};

// --version/--revision/--variant/--all-variants/--torch-version/--backend/--json plus the
// client options.
void add_fetch_options(CLI::App& cmd, FetchArgs& args);

Result<hub::FetchRequest> make_request(const FetchArgs& args, const std::string& repo);

// {"repo","commit","variants","variant"?,"path","snapshot","from_cache","via_daemon",
// "cache_fallback" (null, or the Hub error that made a fetch serve the cache),"files"}
nlohmann::json fetched_to_json(const client::FetchedKernel& kernel);
// One line per variant: <snapshot>/build/<variant>.
void print_variant_paths(const client::FetchedKernel& kernel);

}  // namespace kernelhub::cli
