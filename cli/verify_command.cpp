// `kernelhub verify [ORG/NAME]`: re-hashes cached blobs (the daemon's cache when one runs) and
// re-verifies the signature receipts;
// corrupt blobs are removed so the next fetch downloads them again.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "client_options.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "kernelhub/util/printable.hpp"

namespace kernelhub::cli {
namespace {

struct VerifyArgs {
  std::optional<std::string> repo;
  ClientArgs client;
  bool json = false;
};

int run_verify(const VerifyArgs& args) {
  std::optional<trust::RepoId> repo;
  if (args.repo) {
    auto parsed = trust::RepoId::parse(*args.repo);
    if (!parsed) return report({ErrorCode::invalid_argument, parsed.error().message});
    repo = *parsed;
  }
  auto client = open_client(args.client);
  if (!client) return report(client.error());
  auto result = client->verify(repo);
  if (!result) return report(result.error());
  const auto& corrupt = result->at("corrupt");
  if (args.json) {
    std::cout << result->dump(2) << "\n";
  } else {
    for (const auto& blob : corrupt) {
      std::cout << "corrupt: " << util::printable(blob.value("repo", "?")) << " blob "
                << util::printable(blob.value("blob", "?")) << " ("
                << util::printable(blob.value("reason", "?")) << "), removed\n";
    }
    std::cout << result->value("checked", 0) << " blobs checked, " << corrupt.size()
              << " corrupt\n";
  }
  const auto changed = result->value("receipts_changed", nlohmann::json::array());
  if (!args.json) {
    for (const auto& line : changed) {
      std::cout << "receipt corrected: " << util::printable(line.get<std::string>()) << "\n";
    }
    std::cout << result->value("receipts_checked", 0) << " signature receipts re-verified, "
              << changed.size() << " corrected\n";
  }
  // Corruption is repaired by the next fetch (a receipt is rewritten at once), but scripts
  // must still hear about it.
  return corrupt.empty() && changed.empty() ? 0 : exit_code_for(ErrorCode::hash_mismatch);
}

}  // namespace

void register_verify(CLI::App& app, Action& action) {
  auto args = std::make_shared<VerifyArgs>();
  auto* cmd = app.add_subcommand("verify",
                                 "Re-hash cached blobs, remove corrupt ones; re-verify signature "
                                 "receipts, correct wrong ones (exit 7 if any)");
  cmd->add_option("repo", args->repo, "Only this kernel repository ORG/NAME");
  add_client_options(*cmd, args->client, /*with_policy=*/true);
  cmd->add_flag("--json", args->json, "Machine-readable output");
  cmd->callback([args, &action] { action = [args] { return run_verify(*args); }; });
}

}  // namespace kernelhub::cli
