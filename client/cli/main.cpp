#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "client/cli/commands.hpp"

namespace kernelhub::cli {
std::vector<Registrar>& command_registry() {
  static std::vector<Registrar> registry;
  return registry;
}
}  // namespace kernelhub::cli

int main(int argc, char** argv) {
  CLI::App app{"kernelhub: fetch, verify and cache compute kernels from the Hugging Face Hub"};
  app.require_subcommand(1);

  kernelhub::cli::Action action;
  for (const auto registrar : kernelhub::cli::command_registry()) registrar(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return action ? action() : 2;
  } catch (const std::exception& e) {
    std::cerr << "kernelhub: internal error: " << e.what() << "\n";
    return 70;
  }
}
