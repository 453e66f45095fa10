// Subcommands of the `kernelhub` CLI. Each file registers one subcommand on the app and
// sets `action` to what runs when that subcommand is chosen; main() runs it.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace kernelhub::cli {

// Returns the process exit code. Errors are printed as one line on stderr by the action.
using Action = std::function<int()>;

void register_download(CLI::App& app, Action& action);
void register_ls(CLI::App& app, Action& action);
void register_serve(CLI::App& app, Action& action);
void register_publish(CLI::App& app, Action& action);

}  // namespace kernelhub::cli
