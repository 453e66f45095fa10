// strace around a running kernelhubd, for the crash and fault-injection tests: attach to the
// daemon after start-up (its start-up calls then count for nothing), trace one cold fetch
// thread by thread, and inject a fault (an errno or SIGKILL) into the thread that publishes.
//
// strace numbers the calls of `when=N` per syscall and per thread, and with -P PATH it
// counts (and injects into) only the calls that name PATH. The daemon runs each download in
// a thread of its own, so the N-th call of the publishing thread is one exact call of the
// publish, provided no other thread makes N calls of that syscall (publish_points checks).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon_integration/workspace.hpp"

namespace kernelhub::testing {

// strace attached to `pid` and every thread it has or starts (-f); `options` follow -p PID.
// Waits until strace says it attached. Destruction detaches (SIGINT): the process runs on.
class StraceAttach {
 public:
  StraceAttach(pid_t pid, const std::vector<std::string>& options,
               const std::filesystem::path& log);
  StraceAttach(const StraceAttach&) = delete;
  StraceAttach& operator=(const StraceAttach&) = delete;
  ~StraceAttach();
  void detach();

 private:
  std::unique_ptr<Child> child_;
};

struct TracedCall {
  pid_t tid = 0;
  std::string syscall;
  std::size_t index = 0;  // 1-based, per thread and syscall: what strace's when=N counts
  std::string line;       // as strace -y printed it (fds with their paths)
  bool injected = false;  // strace tampered with this call
};

// The calls in strace -ff output files `<prefix>.<tid>`, in order per thread.
std::vector<TracedCall> read_traces(const std::filesystem::path& prefix);

struct FetchTrace {
  std::filesystem::path cache;  // the cache the traced daemon used
  std::vector<TracedCall> calls;
  pid_t publisher = 0;  // the thread that made most calls naming the repo folder
  // The most calls of each syscall made by any one other thread.
  std::map<std::string, std::size_t> others_max;

  // The publisher's calls of `syscall` whose line contains `part` (a path, or "" for all
  // calls naming the cache).
  std::vector<TracedCall> publisher_calls(const std::string& syscall,
                                          const std::string& part = "") const;
  // Up to `max_points` values of N, spread over `candidates`, that only the publisher can
  // reach (N above others_max).
  std::vector<std::size_t> points(const std::vector<TracedCall>& candidates,
                                  std::size_t max_points) const;
};

// One cold fetch of kRelu v1 by a daemon on a fresh cache of its own in `ws.dir`, with
// `syscalls` traced (strace -f -ff -y attached after start-up, detached after the fetch).
FetchTrace trace_cold_fetch(const Workspace& ws, const std::vector<std::string>& syscalls);

}  // namespace kernelhub::testing
