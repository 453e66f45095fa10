// Starts the ranks of a context-parallel test as separate processes of kh_cp_worker on
// loopback, waits for all of them within a deadline (killing every one past it), and keeps
// each rank's exit status and output for the test's assertions.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace kernelhub::testing {

struct RankResult {
  int exit_code = -1;  // -1: killed at the deadline; 128 + n: killed by signal n
  std::string output;  // stdout and stderr
};

struct RanksRun {
  std::vector<RankResult> ranks;
  double seconds = 0;
  bool timed_out = false;
  std::string log() const;  // every rank's output, for INFO
};

// world processes of `worker` with --rank i --world world --listen-fd/--port (rank 0 owns a
// listening socket made here: no port race) plus `args`.
RanksRun run_ranks(int world, const std::vector<std::string>& args,
                   std::chrono::seconds deadline = std::chrono::seconds(120));

}  // namespace kernelhub::testing
