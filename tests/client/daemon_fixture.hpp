// A real kernelhubd child serving a FixtureHub, on a socket and cache in its own temp dir;
// SIGTERMed and reaped when the handle goes away.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "e2e/e2e_support.hpp"
#include "support/process.hpp"

namespace kernelhub::testing {

inline const std::string kKernelhubd = std::string(KH_BIN_DIR) + "/kernelhubd";

class DaemonFixture {
 public:
  explicit DaemonFixture(const FixtureHub& hub);
  // On a given cache (a restart keeps it) with extra arguments (e.g. --policy, --resolve-ttl).
  DaemonFixture(const FixtureHub& hub, std::filesystem::path cache,
                const std::vector<std::string>& extra_args);
  const std::filesystem::path& socket() const { return socket_; }
  const std::filesystem::path& cache() const { return cache_; }
  int pid() const { return daemon_->pid(); }

 private:
  TempDir dir_;
  std::filesystem::path socket_;
  std::filesystem::path cache_;
  std::unique_ptr<BackgroundProcess> daemon_;
};

// True once something accepts connections on `socket` (bind and listen are two steps).
bool wait_for_listener(const std::filesystem::path& socket);

}  // namespace kernelhub::testing
