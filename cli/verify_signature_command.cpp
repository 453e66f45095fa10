// `kernelhub verify-signature ORG/NAME (--version N | --revision R) [--all-variants]`:
// fetches the kernel in-process (into the invoking user's cache, or --cache-dir) with every
// variant's signature verified and recorded whatever the mode, then prints one line per
// variant as the admin policy in `enforce` would judge it: its identities, its trusted
// root. Exit 1 when any variant fails, like `kernels verify-signature`.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "fetch_args.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/cli/format_units.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/hub/http.hpp"
#include "kernelhub/hub/hub_config.hpp"
#include "kernelhub/hub/signature_gate.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/printable.hpp"

namespace kernelhub::cli {
namespace {

struct VerifySignatureArgs {
  std::string repo;
  FetchArgs fetch;
};

int run_verify_signature(const VerifySignatureArgs& args) {
  auto request = make_request(args.fetch, args.repo);
  if (!request) return report(request.error());
  const auto env = util::Environment::from_process();
  auto loaded = load_admin_policy(args.fetch.client.policy, env);
  if (!loaded) return report(loaded.error());
  trust::AdminPolicy policy = std::move(*loaded);
  // Fetched with every verdict recorded (warn), judged below as enforce would judge it.
  trust::SignatureSettings judge = policy.signatures;
  judge.mode = trust::SignatureMode::enforce;
  policy.signatures.mode = trust::SignatureMode::warn;
  const auto config = hub::HubConfig::from(env);
  hub::CurlHttpClient http(config);
  cache::KernelCache cache(args.fetch.client.cache_dir
                               ? std::filesystem::path(*args.fetch.client.cache_dir)
                               : cache::resolve_cache_root(env));
  hub::Fetcher fetcher(config, http, cache, std::move(policy), trust::TrustEnvironment::from(env),
                       env);
  auto fetched = fetcher.fetch(*request);
  if (!fetched) return report(fetched.error());
  bool all_hold = true;
  for (const auto& receipt : fetched->signatures) {
    const trust::RepoId& repo = fetched->manifest.repo;
    const std::string where = repo.str() + " build/" + receipt.variant;
    auto verdict = hub::decide_signature(judge, repo, receipt, fetched->signed_version);
    if (!verdict) {
      all_hold = false;
      std::cout << "\u274c " << util::printable(verdict.error().message) << "\n";
      continue;
    }
    const auto& sans = receipt.identity.sans;
    // The identity is the certificate's text: escaped like any outside text.
    std::cout << "\u2705 " << util::printable(where) << ": signed by "
              << util::printable(sans.empty() ? "?" : sans[0]) << " ("
              << util::printable(receipt.identity.issuer_v1.value_or("?")) << ") at "
              << format_utc(receipt.signed_at) << "\n";
  }
  return all_hold ? 0 : 1;
}

}  // namespace

void register_verify_signature(CLI::App& app, Action& action) {
  auto args = std::make_shared<VerifySignatureArgs>();
  auto* cmd = app.add_subcommand(
      "verify-signature",
      "Verify the Sigstore signature of each variant of a kernel against the admin policy "
      "(one line per variant; exit 1 if any fails)");
  cmd->add_option("repo", args->repo, "Kernel repository ORG/NAME")->required();
  FetchArgs& fetch = args->fetch;
  auto* version = cmd->add_option("--version", fetch.version, "Major version (branch vN)");
  cmd->add_option("--revision", fetch.revision, "Branch, tag or commit sha")->excludes(version);
  auto* variant = cmd->add_option("--variant", fetch.variant, "Exact build variant");
  cmd->add_flag("--all-variants", fetch.all_variants, "Every build variant")->excludes(variant);
  cmd->add_option("--torch-version", fetch.torch_version, "Torch version to select for");
  cmd->add_option("--backend", fetch.backend, "Backend to select for: cpu, cuda, cu132, ...");
  cmd->add_option("--policy", fetch.client.policy,
                  "Admin policy whose [signatures] judges (default: $KERNELHUB_POLICY)");
  cmd->add_option("--cache-dir", fetch.client.cache_dir,
                  "Cache to fetch into (default: the user's, as embedded mode)");
  cmd->callback([args, &action] { action = [args] { return run_verify_signature(*args); }; });
}

}  // namespace kernelhub::cli
