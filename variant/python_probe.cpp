#include "kernelhub/variant/python_probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::variant {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxOutput = 4096;  // one path
constexpr const char* kScript =
    "import importlib.util as u\n"
    "s = u.find_spec('torch')\n"
    "print(s.origin if s is not None and s.origin else '')\n";

bool is_executable(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<fs::path> in_path(const util::Environment& env, const std::string& name) {
  const std::string path = env.get("PATH").value_or("");
  std::size_t start = 0;
  while (start <= path.size()) {
    const auto colon = path.find(':', start);
    const std::string dir =
        path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty() && dir.front() == '/' && is_executable(fs::path(dir) / name))
      return fs::path(dir) / name;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return std::nullopt;
}

// Kills and reaps the child on every path out of probe_torch_version_file.
struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
};

}  // namespace

std::optional<fs::path> find_python(const util::Environment& env) {
  if (const auto chosen = env.get("KERNELHUB_PYTHON"); chosen && !chosen->empty()) {
    if (chosen->find('/') != std::string::npos) return fs::path(*chosen);
    return in_path(env, *chosen);
  }
  for (const char* name : {"python3", "python"}) {
    if (auto found = in_path(env, name)) return found;
  }
  return std::nullopt;
}

Result<std::string> run_python(const fs::path& python, const std::vector<std::string>& args,
                               const util::Environment& env, std::chrono::milliseconds timeout,
                               std::size_t max_output) {
  std::array<int, 2> pipe_fds{};
  if (::pipe2(pipe_fds.data(), O_CLOEXEC) != 0)
    return fail(ErrorCode::io, std::string("pipe: ") + std::strerror(errno));
  UniqueFd read_end(pipe_fds[0]);
  UniqueFd write_end(pipe_fds[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  const std::string program = python.string();
  std::vector<std::string> arguments{program};
  arguments.insert(arguments.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(arguments.size() + 1);
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  // The child sees the caller's environment (PYTHONPATH, PYENV_VERSION, ...), as a shell would.
  std::vector<std::string> vars;
  vars.reserve(env.vars().size());
  for (const auto& [key, value] : env.vars()) vars.emplace_back(key).append("=").append(value);
  std::vector<char*> envp;
  envp.reserve(vars.size() + 1);
  for (auto& var : vars) envp.push_back(var.data());
  envp.push_back(nullptr);
  Child child;
  const int spawned =
      ::posix_spawn(&child.pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  write_end.reset();
  if (spawned != 0) {
    child.pid = -1;
    return fail(ErrorCode::io, "cannot run " + program + ": " + std::strerror(spawned));
  }

  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return fail(ErrorCode::timeout,
                  program + " did not answer within " + std::to_string(timeout.count()) + " ms");
    }
    pollfd p{read_end.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    std::array<char, 4096> buffer{};
    const ssize_t n = ::read(read_end.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer.data(), static_cast<std::size_t>(n));
    if (out.size() > max_output) return fail(ErrorCode::too_large, program + " said too much");
  }
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  child.pid = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail(ErrorCode::io, program + " failed");
  return out;
}

Result<std::optional<fs::path>> probe_torch_version_file(const fs::path& python,
                                                         const util::Environment& env,
                                                         std::chrono::milliseconds timeout) {
  auto said = run_python(python, {"-c", kScript}, env, timeout, kMaxOutput);
  if (!said && said.error().code == ErrorCode::timeout) {
    return fail(ErrorCode::timeout, python.string() + " did not say where torch is within " +
                                        std::to_string(timeout.count()) +
                                        " ms; set KERNELHUB_TORCH_VERSION or pass --torch-version");
  }
  if (!said && said.error().code == ErrorCode::io && said.error().message.ends_with(" failed")) {
    return fail(ErrorCode::io, python.string() + " failed while looking for torch");
  }
  KH_TRY_ASSIGN(std::string out, std::move(said));
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.empty()) return std::optional<fs::path>{};
  const fs::path origin(out);
  if (!origin.is_absolute() || origin.filename() != "__init__.py") return std::optional<fs::path>{};
  return std::optional<fs::path>{origin.parent_path() / "version.py"};
}

}  // namespace kernelhub::variant
