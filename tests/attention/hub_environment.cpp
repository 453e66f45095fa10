#include "attention/hub_environment.hpp"

#include <unistd.h>

#include <cstdlib>

#include <ATen/core/TensorBody.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/max.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/sub.h>

#include "kernelhub/provider/process_environment.hpp"

namespace kernelhub::testing {

void set_dispatcher_env(const std::map<std::string, std::string>& env) {
  for (const auto& [name, value] : env) {
    if (value.empty()) {
      ::unsetenv(name.c_str());
    } else {
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  provider::reload_process_environment();
}

std::filesystem::path fixture_root() { return std::filesystem::path(KH_BUILD_DIR) / "fixtures"; }
std::filesystem::path local_fixture(const std::string& name) {
  return fixture_root() / "local" / name;
}

HubEnvironment::HubEnvironment(HubEnvironmentOptions options) : cache_(dir_.path() / "cache") {
  const std::string bin = KH_BIN_DIR;
  const auto port_file = dir_.path() / "port";
  server_ = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{bin + "/kernelhub-test-hub", "--root", KH_FIXTURE_HUB, "--port", "0",
                               "--port-file", port_file.string(), "--test-endpoints"});
  std::string port = wait_for_file(port_file);
  while (!port.empty() && (port.back() == '\n' || port.back() == '\r')) port.pop_back();
  endpoint_ = "http://127.0.0.1:" + port;

  std::map<std::string, std::string> env = {
      {"HF_ENDPOINT", endpoint_},
      {"HF_HUB_CACHE", cache_.string()},
      {"HF_HOME", (dir_.path() / "hf").string()},
      {"HF_HUB_OFFLINE", ""},
      {"HF_TOKEN", ""},
      {"LOCAL_KERNELS", ""},
      {"DIFFUSERS_TRUST_REMOTE_KERNELS", ""},
      {"DIFFUSERS_DISABLE_REMOTE_CODE", ""},
      {"KERNELHUB_REQUIRE_DAEMON", ""},
      {"KERNELHUB_POLICY", ""},
      {"KERNELHUB_LOCKFILE", ""},
      // No daemon unless asked: a socket path that does not exist means embedded mode.
      {"KERNELHUB_SOCKET", (dir_.path() / "no-daemon.sock").string()}};
  if (options.with_daemon) {
    const auto socket = dir_.path() / "kernelhub.sock";
    daemon_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{bin + "/kernelhubd", "--socket", socket.string(), "--cache-dir",
                                 cache_.string()},
        EnvOverrides{{"HF_ENDPOINT", endpoint_}});
    for (int i = 0; i < 200 && !std::filesystem::exists(socket); ++i) {
      ::usleep(50'000);
    }
    env["KERNELHUB_SOCKET"] = socket.string();
    env["KERNELHUB_REQUIRE_DAEMON"] = "1";
  }
  for (const auto& [name, value] : options.env) env[name] = value;
  set_dispatcher_env(env);
}

HubEnvironment::~HubEnvironment() = default;

at::Tensor sdpa_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          bool causal, const std::optional<at::Tensor>& key_mask,
                          std::optional<double> scale) {
  at::Tensor key = k.to(at::kFloat);
  at::Tensor value = v.to(at::kFloat);
  const int64_t groups = q.size(2) / k.size(2);
  if (groups > 1) {
    key = at::repeat_interleave(key, groups, 2);
    value = at::repeat_interleave(value, groups, 2);
  }
  std::optional<at::Tensor> mask;
  if (key_mask) mask = key_mask->view({key_mask->size(0), 1, 1, key_mask->size(1)});
  return at::scaled_dot_product_attention(q.to(at::kFloat).transpose(1, 2), key.transpose(1, 2),
                                          value.transpose(1, 2), mask, 0.0, causal, scale)
      .transpose(1, 2);
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return at::abs(at::sub(a.to(at::kFloat), b.to(at::kFloat))).max().item().toDouble();
}

}  // namespace kernelhub::testing
