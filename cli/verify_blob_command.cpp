// `kernelhub verify-blob FILE --bundle B --certificate-identity URI
// --certificate-oidc-issuer URL [--trusted-root R]`: the shape of `cosign verify-blob`.
// Offline: the trusted root is the pinned production one unless R names "staging" or a file.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "exit_codes.hpp"
#include "kernelhub/cli/format_units.hpp"
#include "kernelhub/trust/sigstore/bundle.hpp"
#include "kernelhub/trust/sigstore/pinned_roots.hpp"
#include "kernelhub/trust/sigstore/verifier.hpp"
#include "kernelhub/util/printable.hpp"
#include "kernelhub/util/read_file.hpp"

namespace kernelhub::cli {
namespace {

// Artifacts verified this way are metadata.json files and similar; larger ones are refused
// rather than read whole.
constexpr std::size_t kMaxArtifactBytes = 64u << 20;

struct VerifyBlobArgs {
  std::string file;
  std::string bundle;
  std::string trusted_root = "production";
  std::optional<std::string> identity;
  std::string issuer;
  std::optional<std::string> source_repository;
  std::vector<std::string> build_signer_uris;
};

int run_verify_blob(const VerifyBlobArgs& args) {
  namespace sigstore = trust::sigstore;
  const auto artifact = util::read_small_file(args.file, kMaxArtifactBytes);
  if (!artifact) {
    return report({artifact.error().code == ErrorCode::io ? ErrorCode::invalid_argument
                                                          : artifact.error().code,
                   artifact.error().message});
  }
  const auto bundle = util::read_small_file(args.bundle, sigstore::kMaxBundleBytes);
  if (!bundle && bundle.error().code == ErrorCode::too_large) {
    // A bundle over its bound is one that does not verify, as in a fetch ("bundle: ...").
    report({ErrorCode::signature_invalid, "bundle: " + bundle.error().message});
    return 1;
  }
  if (!bundle) {
    return report(
        {bundle.error().code == ErrorCode::io ? ErrorCode::signature_missing : bundle.error().code,
         "cannot read the bundle: " + bundle.error().message});
  }
  auto root = sigstore::load_trusted_root_setting(args.trusted_root);
  if (!root) return report(root.error());
  if (!args.identity && (!args.source_repository || args.build_signer_uris.empty())) {
    return report({ErrorCode::invalid_argument,
                   "name the signer: --certificate-identity, or --certificate-source-repository "
                   "with --certificate-build-signer-uri"});
  }
  sigstore::IdentityPolicy policy;
  if (args.identity) policy.sans.push_back(*args.identity);
  policy.issuer = args.issuer;
  policy.source_repository = args.source_repository;
  policy.build_signer_uris = args.build_signer_uris;
  auto verified = sigstore::verify_artifact_bundle(*artifact, *bundle, *root, policy);
  if (!verified) {
    report(verified.error());
    return 1;  // like cosign verify-blob and kernels verify-signature
  }
  const auto& sans = verified->identity.sans;
  std::cout << "Verified OK: " << util::printable(args.file) << " signed by "
            << util::printable(sans.empty() ? "?" : sans[0]) << " at "
            << format_utc(verified->verified_times.front()) << "\n";
  return 0;
}

// Its own table: a failed verification exits 1 as cosign's does; the other codes are the
// CLI's (exit_code_for) for the errors this command can meet.
std::string exit_codes() {
  const auto code = [](ErrorCode c) { return std::to_string(exit_code_for(c)); };
  return "Exit codes: 0 verified; 1 the bundle does not verify the file (the failed check is "
         "named); " +
         code(ErrorCode::invalid_argument) +
         " bad arguments, or the file, the bundle or the trusted root cannot be used (not a "
         "regular file, not a trusted root); " +
         code(ErrorCode::signature_missing) + " the bundle cannot be opened; " +
         code(ErrorCode::too_large) + " the file is over its size limit (64 MiB; a bundle over " +
         "its 1 MiB does not verify: 1).";
}

}  // namespace

void register_verify_blob(CLI::App& app, Action& action) {
  auto args = std::make_shared<VerifyBlobArgs>();
  auto* cmd = app.add_subcommand(
      "verify-blob", "Verify a Sigstore bundle over a file, offline (exit codes below)");
  cmd->footer(exit_codes());
  cmd->add_option("file", args->file, "The signed file")->required();
  cmd->add_option("--bundle", args->bundle, "The Sigstore bundle (.sigstore, .sigstore.json)")
      ->required();
  cmd->add_option("--certificate-identity", args->identity,
                  "The signer's identity: the certificate's SAN (a workflow URI or e-mail)");
  cmd->add_option(
         "--certificate-oidc-issuer", args->issuer,
         "The OIDC issuer of that identity, e.g. https://token.actions.githubusercontent.com")
      ->required();
  cmd->add_option("--certificate-source-repository", args->source_repository,
                  "Also require this source repository URI (Fulcio extension .1.12)");
  cmd->add_option("--certificate-build-signer-uri", args->build_signer_uris,
                  "Also require one of these build signer URIs (.1.9); repeatable");
  cmd->add_option("--trusted-root", args->trusted_root,
                  "production (default) or staging (the pinned roots), or a trusted_root.json");
  cmd->callback([args, &action] { action = [args] { return run_verify_blob(*args); }; });
}

}  // namespace kernelhub::cli
