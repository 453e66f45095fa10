// Test harness for the hub and library backends: a `kernelhub serve` of the fixture Hub
// store on loopback, a private cache, optionally a kernelhubd, and the process environment
// the dispatcher reads (set before, then reloaded). Also the SDPA reference the backends
// are compared with.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>

#include "support/process.hpp"

namespace kernelhub::testing {

struct HubEnvironmentOptions {
  bool with_daemon = false;  // fetch through a kernelhubd instead of in-process
  std::map<std::string, std::string> env =
      {};  // extra variables (e.g. DIFFUSERS_TRUST_REMOTE_KERNELS)
};

class HubEnvironment {
 public:
  explicit HubEnvironment(HubEnvironmentOptions options = {});
  ~HubEnvironment();
  const std::filesystem::path& cache() const { return cache_; }
  const std::string& endpoint() const { return endpoint_; }

 private:
  TempDir dir_;
  std::filesystem::path cache_;
  std::string endpoint_;
  std::unique_ptr<BackgroundProcess> server_;
  std::unique_ptr<BackgroundProcess> daemon_;
};

// Sets (or, for "", unsets) a variable and makes the dispatcher re-read its environment.
void set_dispatcher_env(const std::map<std::string, std::string>& env);

// Folders built by tests/fixtures: <build>/fixtures/local/<name>.
std::filesystem::path local_fixture(const std::string& name);
std::filesystem::path fixture_root();

// ATen SDPA on (B,S,H,D) inputs, in fp32, with an optional bool key-padding mask (B, Skv).
at::Tensor sdpa_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          bool causal = false, const std::optional<at::Tensor>& key_mask = {},
                          std::optional<double> scale = {});

double max_abs_diff(const at::Tensor& a, const at::Tensor& b);

}  // namespace kernelhub::testing
