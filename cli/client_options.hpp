// The flags every daemon-aware command shares (--socket, --require-daemon, --cache-dir,
// --policy) and how they become a client::Client.
#pragma once

#include <optional>
#include <string>

#include "kernelhub/client/client.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/environment.hpp"

namespace CLI {
class App;
}

namespace kernelhub::cli {

struct ClientArgs {
  std::optional<std::string> socket;
  bool require_daemon = false;
  std::optional<std::string> cache_dir;  // given: embedded mode on that cache
  std::optional<std::string> policy;     // embedded mode only
};

// Adds --socket, --require-daemon and --cache-dir; --policy too when `with_policy`.
void add_client_options(CLI::App& cmd, ClientArgs& args, bool with_policy);

// The admin policy of an in-process command: --policy, else $KERNELHUB_POLICY, else the
// defaults.
Result<trust::AdminPolicy> load_admin_policy(const std::optional<std::string>& flag,
                                             const util::Environment& env);

// Opens a client from the process environment and the flags. An explicit --cache-dir means
// that cache, so the daemon is not asked (and --require-daemon with it is an error).
Result<client::Client> open_client(const ClientArgs& args);

}  // namespace kernelhub::cli
