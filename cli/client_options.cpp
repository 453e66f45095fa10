#include "client_options.hpp"

#include <CLI/CLI.hpp>

#include "kernelhub/hub/signature_gate.hpp"
#include "kernelhub/util/environment.hpp"

namespace kernelhub::cli {

void add_client_options(CLI::App& cmd, ClientArgs& args, bool with_policy) {
  cmd.add_option("--socket", args.socket,
                 "kernelhubd socket (default: $KERNELHUB_SOCKET, else " +
                     std::string(client::kDefaultSocket) + ")");
  cmd.add_flag(
      "--require-daemon", args.require_daemon,
      "Fail unless kernelhubd answers (also KERNELHUB_REQUIRE_DAEMON=1); no embedded fallback");
  cmd.add_option("--cache-dir", args.cache_dir,
                 "Use this cache in-process instead of the daemon's (default: KERNELS_CACHE, "
                 "HF_HUB_CACHE, ...)");
  if (with_policy) {
    cmd.add_option("--policy", args.policy,
                   "Admin trust policy file, embedded mode (default: $KERNELHUB_POLICY)");
  }
}

Result<trust::AdminPolicy> load_admin_policy(const std::optional<std::string>& flag,
                                             const util::Environment& env) {
  if (auto file = flag ? flag : env.get("KERNELHUB_POLICY")) return hub::load_checked_policy(*file);
  return trust::AdminPolicy{};
}

Result<client::Client> open_client(const ClientArgs& args) {
  const auto env = util::Environment::from_process();
  client::ClientOptions options;
  if (args.socket) options.socket = *args.socket;
  options.require_daemon = args.require_daemon;
  options.pipelined_handshake = true;  // one request per CLI run: save the hello round trip
  if (args.cache_dir) {
    options.cache_dir = *args.cache_dir;
    options.embedded_only = true;
  }
  if (args.policy) options.policy_file = *args.policy;
  if (options.embedded_only &&
      (options.require_daemon || env.is_true("KERNELHUB_REQUIRE_DAEMON"))) {
    return fail(ErrorCode::invalid_argument,
                "--cache-dir runs in-process; it cannot be combined with a required daemon");
  }
  return client::Client::open(env, std::move(options));
}

}  // namespace kernelhub::cli
