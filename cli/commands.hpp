// Subcommands of the `kernelhub` CLI. Each *_command.cpp defines one register_* function that
// adds its subcommand to the app and sets `action` to what runs when that subcommand is
// chosen; kCommands lists them (in --help order) and main() runs the chosen action.
#pragma once

#include <array>
#include <functional>

namespace CLI {
class App;
}

namespace kernelhub::cli {

// Returns the process exit code. Errors are printed as one line on stderr by the action.
using Action = std::function<int()>;
using Registrar = void (*)(CLI::App& app, Action& action);

void register_bundle(CLI::App& app, Action& action);
void register_download(CLI::App& app, Action& action);
void register_gc(CLI::App& app, Action& action);
void register_lock(CLI::App& app, Action& action);
void register_ls(CLI::App& app, Action& action);
void register_pin(CLI::App& app, Action& action);
void register_prefetch(CLI::App& app, Action& action);
void register_publish(CLI::App& app, Action& action);
void register_serve(CLI::App& app, Action& action);
void register_status(CLI::App& app, Action& action);
void register_unpin(CLI::App& app, Action& action);
void register_verify_blob(CLI::App& app, Action& action);
void register_verify(CLI::App& app, Action& action);
void register_verify_signature(CLI::App& app, Action& action);

// Every subcommand, registered explicitly (no static constructors: the order is this list's).
inline constexpr std::array<Registrar, 14> kCommands{
    register_bundle,   register_download,
    register_gc,       register_lock,
    register_ls,       register_pin,
    register_prefetch, register_publish,
    register_serve,    register_status,
    register_unpin,    register_verify_blob,
    register_verify,   register_verify_signature,
};

}  // namespace kernelhub::cli
