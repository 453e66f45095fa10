// Runs the project's binaries as real child processes in tests: a one-shot command with
// captured output, or a background server that is killed when the handle goes away.
#pragma once

#include <spawn.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kernelhub::testing {

// The whole file as bytes; empty when it cannot be read.
std::string slurp(const std::filesystem::path& path);

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

using EnvOverrides = std::map<std::string, std::string>;  // value "" removes the variable

// The process environment with `env` applied, as KEY=VALUE strings for execve/posix_spawn.
std::vector<std::string> environment_with(const EnvOverrides& env);

// posix_spawn file actions (the child's stdin/stdout/stderr), destroyed with the object.
class SpawnActions {
 public:
  SpawnActions() { posix_spawn_file_actions_init(&raw_); }
  SpawnActions(const SpawnActions&) = delete;
  SpawnActions& operator=(const SpawnActions&) = delete;
  ~SpawnActions() { posix_spawn_file_actions_destroy(&raw_); }
  posix_spawn_file_actions_t* get() { return &raw_; }
  const posix_spawn_file_actions_t* get() const { return &raw_; }

 private:
  posix_spawn_file_actions_t raw_{};
};

// posix_spawnp(argv) with environment_with(env) and `actions`; throws on failure. Returns
// the child's pid.
int spawn_process(const std::vector<std::string>& argv, const EnvOverrides& env,
                  const SpawnActions& actions);

// Runs argv[0] (a path) with the process environment plus `env`, waits for it.
CommandResult run_command(const std::vector<std::string>& argv, const EnvOverrides& env = {},
                          std::chrono::seconds timeout = std::chrono::seconds(120));

// A background child (e.g. `kernelhub serve`), SIGTERMed and reaped on destruction.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const EnvOverrides& env = {});
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  ~BackgroundProcess();
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
};

// Waits until `path` exists and is non-empty, then returns its content.
std::string wait_for_file(const std::filesystem::path& path,
                          std::chrono::milliseconds timeout = std::chrono::seconds(20));

// A fresh temporary directory, removed recursively on destruction.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace kernelhub::testing
