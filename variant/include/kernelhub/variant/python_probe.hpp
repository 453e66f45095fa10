// Where the client's Python finds torch, asked of that Python (bounded in time and output):
// a user's machine has its own interpreter and torch, so nothing is fixed at build time.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::variant {

inline constexpr std::chrono::milliseconds kPythonProbeTimeout{5000};

// The interpreter to ask: $KERNELHUB_PYTHON (a path, or a name looked up in PATH), else
// python3, else python, looked up in the environment's PATH. nullopt when there is none.
std::optional<std::filesystem::path> find_python(const util::Environment& env);

// Runs `python args...` with `env` as its environment and returns what it printed on stdout
// (stderr is dropped): timeout (the child is killed), too_large (more than max_output
// bytes), io (it could not start, or exited non-zero: "... failed").
Result<std::string> run_python(const std::filesystem::path& python,
                               const std::vector<std::string>& args, const util::Environment& env,
                               std::chrono::milliseconds timeout, std::size_t max_output);

// Runs `python` (with `env` as its environment) on a short script that locates the `torch`
// package without importing it (importlib.util.find_spec) and returns torch/version.py, or
// nullopt when that Python has no torch. timeout (the child is killed after `timeout`),
// too_large or io when the interpreter misbehaves.
Result<std::optional<std::filesystem::path>> probe_torch_version_file(
    const std::filesystem::path& python, const util::Environment& env,
    std::chrono::milliseconds timeout = kPythonProbeTimeout);

}  // namespace kernelhub::variant
