// `kernelhub publish --root DIR --repo ORG/NAME --branch B [--tag T] [--message M] SRC_DIR`:
// adds SRC_DIR to a local store (what `kernelhub serve` serves) as a new commit;
// `--point-to COMMIT` instead moves the branch to an existing commit (a force-push).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "kernelhub/hub/server/store_publisher.hpp"
#include "kernelhub/util/printable.hpp"

namespace kernelhub::cli {
namespace {

struct PublishArgs {
  std::string root;
  std::string repo;
  std::string branch = "main";
  std::string tag;
  std::string message;
  std::string source;
  std::string point_to;
};

int run_publish(const PublishArgs& args) {
  auto repo = trust::RepoId::parse(args.repo);
  if (!repo) {
    std::cerr << "kernelhub publish: " << util::printable(repo.error().message) << "\n";
    return 2;
  }
  if (!args.point_to.empty()) {
    if (auto pointed = hub::server::point_branch(args.root, *repo, args.branch, args.point_to);
        !pointed) {
      std::cerr << "kernelhub publish: " << util::printable(pointed.error().message) << "\n";
      return 1;
    }
    std::cout << args.point_to << "\n";
    return 0;
  }
  if (args.source.empty()) {
    std::cerr << "kernelhub publish: give SRC_DIR, or --point-to COMMIT\n";
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
    std::cerr << "kernelhub publish: " << util::printable(result.error().message) << "\n";
    return 1;
  }
  std::cout << result->commit << "\n";
  return 0;
}

}  // namespace

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
  auto* source = cmd->add_option("source", args->source, "Directory to publish");
  cmd->add_option("--point-to", args->point_to,
                  "Point --branch at this existing commit instead (a force-push, for tests)")
      ->excludes(source);
  cmd->callback([args, &action] { action = [args] { return run_publish(*args); }; });
}

}  // namespace kernelhub::cli
