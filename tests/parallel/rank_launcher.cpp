#include "parallel/rank_launcher.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include <stdexcept>
#include <thread>

#include "support/process.hpp"

namespace kernelhub::testing {
namespace {

// A listening loopback socket on a free port, for rank 0's TCPStore to take over.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(fd, 64) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("cannot make a loopback listener for the store");
    }
    port = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
};

}  // namespace

std::string RanksRun::log() const {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    out += "--- rank " + std::to_string(i) + " (exit " + std::to_string(ranks[i].exit_code) +
           ")\n" + ranks[i].output;
  }
  return out;
}

RanksRun run_ranks(int world, const std::vector<std::string>& args, std::chrono::seconds deadline) {
  TempDir dir;
  Listener listener;
  std::vector<int> pids;
  const auto start = std::chrono::steady_clock::now();
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> argv{std::string(KH_BIN_DIR) + "/kh_cp_worker",
                                  "--rank",
                                  std::to_string(rank),
                                  "--world",
                                  std::to_string(world),
                                  "--port",
                                  std::to_string(listener.port),
                                  "--listen-fd",
                                  rank == 0 ? std::to_string(listener.fd) : "-1"};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string log = (dir.path() / ("rank" + std::to_string(rank))).string();
    SpawnActions actions;
    posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(actions.get(), 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(actions.get(), 1, 2);
    if (rank != 0) posix_spawn_file_actions_addclose(actions.get(), listener.fd);
    pids.push_back(spawn_process(argv, {}, actions));
  }
  RanksRun run;
  run.ranks.resize(world);
  std::vector<bool> done(world, false);
  int remaining = world;
  while (remaining > 0) {
    for (int rank = 0; rank < world; ++rank) {
      int status = 0;
      if (done[rank] || ::waitpid(pids[rank], &status, WNOHANG) == 0) continue;
      done[rank] = true;
      --remaining;
      run.ranks[rank].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (remaining > 0 && std::chrono::steady_clock::now() - start > deadline) {
      run.timed_out = true;
      for (int rank = 0; rank < world; ++rank) {
        if (done[rank]) continue;
        ::kill(pids[rank], SIGKILL);
        ::waitpid(pids[rank], nullptr, 0);
        done[rank] = true;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int rank = 0; rank < world; ++rank) {
    run.ranks[rank].output = slurp(dir.path() / ("rank" + std::to_string(rank)));
  }
  return run;
}

}  // namespace kernelhub::testing
