// `kernelhub publish --root DIR --repo ORG/NAME --branch B [--tag T] [--message M] SRC_DIR`:
// adds SRC_DIR to a local store (what `kernelhub serve` serves) as a new commit.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "client/cli/commands.hpp"
#include "hub/server/store_publisher.hpp"

namespace kernelhub::cli {
namespace {

struct PublishArgs {
  std::string root;
  std::string repo;
  std::string branch = "main";
  std::string tag;
  std::string message;
  std::string source;
};

int run_publish(const PublishArgs& args) {
  auto repo = trust::RepoId::parse(args.repo);
  if (!repo) {
    std::cerr << "kernelhub publish: " << repo.error().message << "\n";
    return 2;
  }
  hub::server::PublishRequest request;
  request.root = args.root;
  request.repo = *repo;
  request.branch = args.branch;
  if (!args.tag.empty()) request.tag = args.tag;
  request.message = args.message;
  request.source = args.source;
  auto result = hub::server::publish_directory(request);
  if (!result) {
    std::cerr << "kernelhub publish: " << result.error().message << "\n";
    return 1;
  }
  std::cout << result->commit << "\n";
  return 0;
}

void register_publish(CLI::App& app, Action& action) {
  auto args = std::make_shared<PublishArgs>();
  auto* cmd =
      app.add_subcommand("publish", "Add a directory to a local kernel store as a new commit");
  cmd->add_option("--root", args->root, "Store directory")->required();
  cmd->add_option("--repo", args->repo, "Repository ORG/NAME")->required();
  cmd->add_option("--branch", args->branch, "Branch to move (created if missing)")
      ->capture_default_str();
  cmd->add_option("--tag", args->tag, "Tag to create on the new commit");
  cmd->add_option("--message", args->message, "Commit message");
  cmd->add_option("source", args->source, "Directory to publish")->required();
  cmd->callback([args, &action] { action = [args] { return run_publish(*args); }; });
}

}  // namespace

KH_REGISTER_COMMAND(register_publish);

}  // namespace kernelhub::cli
