// Subcommands of the `kernelhub` CLI. Each *_command.cpp registers one subcommand with
// KH_REGISTER_COMMAND; the registration adds it to the app and sets `action` to what runs
// when that subcommand is chosen. main() runs the chosen action.
#pragma once

#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace kernelhub::cli {

// Returns the process exit code. Errors are printed as one line on stderr by the action.
using Action = std::function<int()>;
using Registrar = void (*)(CLI::App& app, Action& action);

std::vector<Registrar>& command_registry();

struct CommandRegistration {
  explicit CommandRegistration(Registrar registrar) { command_registry().push_back(registrar); }
};

}  // namespace kernelhub::cli

#define KH_REGISTER_COMMAND(registrar) \
  static const ::kernelhub::cli::CommandRegistration kh_registration_##registrar { registrar }
