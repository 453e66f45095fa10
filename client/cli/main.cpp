#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "client/cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"kernelhub: fetch, verify and cache compute kernels from the Hugging Face Hub"};
  app.require_subcommand(1);
  app.set_version_flag("--version-info", "kernelhub 0.1.0");

  kernelhub::cli::Action action;
  kernelhub::cli::register_download(app, action);
  kernelhub::cli::register_ls(app, action);
  kernelhub::cli::register_serve(app, action);
  kernelhub::cli::register_publish(app, action);

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
