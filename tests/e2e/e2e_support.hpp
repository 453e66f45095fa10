// Shared pieces of the end-to-end tests: a `kernelhub serve` child on the fixture store
// with its request log, and a `kernelhub` CLI runner.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace kernelhub::testing {

inline const std::string kKernelhub = std::string(KH_BIN_DIR) + "/kernelhub";
// kernelhub serve with /_kernelhub/{requests,faults} (tests/support/fault_hub).
inline const std::string kTestHub = std::string(KH_BIN_DIR) + "/kernelhub-test-hub";
inline const std::string kVariant = KH_FIXTURE_VARIANT;

class FixtureHub {
 public:
  // Serves `root` (default: the fixture store; tests that move branches serve a copy).
  explicit FixtureHub(const std::filesystem::path& root = KH_FIXTURE_HUB);
  const std::string& endpoint() const { return endpoint_; }
  // Requests the server has seen whose method matches and whose path contains `part`.
  std::size_t count(const std::string& method, const std::string& part) const;
  std::size_t total_requests() const;
  // Waits (server-side, /_kernelhub/requests/wait) until `n` requests match as count()
  // counts them, up to `timeout`; false when it timed out.
  bool wait_for(const std::string& method, const std::string& part, std::size_t n,
                std::chrono::milliseconds timeout) const;
  void reset_requests() const;

 private:
  TempDir dir_;
  std::unique_ptr<BackgroundProcess> server_;
  std::string endpoint_;
  int port_ = 0;
};

// Runs `kernelhub ARGS...` with HF_ENDPOINT/cache/trust variables controlled by the caller;
// the trust variables are cleared unless given.
CommandResult run_kernelhub(const std::vector<std::string>& args, EnvOverrides env = {});

std::string sha256_hex_of_file(const std::filesystem::path& path);

}  // namespace kernelhub::testing
