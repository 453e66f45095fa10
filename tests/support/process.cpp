#include "support/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace kernelhub::testing {
namespace {

int spawn(const std::vector<std::string>& argv, const EnvOverrides& env,
          const std::string& out_path, const std::string& err_path) {
  SpawnActions actions;
  posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(actions.get(), 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(actions.get(), 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  return spawn_process(argv, env, actions);
}

}  // namespace

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> environment_with(const EnvOverrides& overrides) {
  std::map<std::string, std::string> vars;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string kv(*entry);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [key, value] : overrides) {
    if (value.empty()) {
      vars.erase(key);
    } else {
      vars[key] = value;
    }
  }
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [key, value] : vars) out.push_back(key + "=" + value);
  return out;
}

int spawn_process(const std::vector<std::string>& argv, const EnvOverrides& env,
                  const SpawnActions& actions) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto env_strings = environment_with(env);
  std::vector<char*> envp;
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], actions.get(), nullptr, args.data(), envp.data());
  if (rc != 0) throw std::runtime_error("cannot spawn " + argv[0] + ": " + std::strerror(rc));
  return pid;
}

CommandResult run_command(const std::vector<std::string>& argv, const EnvOverrides& env,
                          std::chrono::seconds timeout) {
  TempDir io;
  const auto out_path = io.path() / "out";
  const auto err_path = io.path() / "err";
  const int pid = spawn(argv, env, out_path, err_path);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw std::runtime_error("command timed out: " + argv[0]);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const EnvOverrides& env) {
  pid_ = spawn(argv, env, "/dev/null", "/dev/null");
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200 && waitpid(pid_, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (waitpid(pid_, &status, WNOHANG) == 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
  }
}

std::string wait_for_file(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    if (std::filesystem::file_size(path, ec) > 0 && !ec) return slurp(path);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("timed out waiting for " + path.string());
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kernelhub-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace kernelhub::testing
