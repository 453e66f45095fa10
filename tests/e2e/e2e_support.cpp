#include "e2e/e2e_support.hpp"

#include <httplib.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "kernelhub/trust/digest.hpp"

namespace kernelhub::testing {

FixtureHub::FixtureHub(const std::filesystem::path& root) {
  const auto port_file = dir_.path() / "port";
  server_ = std::make_unique<BackgroundProcess>(
      std::vector<std::string>{kTestHub, "--root", root.string(), "--bind", "127.0.0.1:0",
                               "--port-file", port_file.string(), "--test-endpoints"});
  port_ = std::stoi(wait_for_file(port_file));
  endpoint_ = "http://127.0.0.1:" + std::to_string(port_);
}

std::size_t FixtureHub::count(const std::string& method, const std::string& part) const {
  httplib::Client client("127.0.0.1", port_);
  const auto response = client.Get("/_kernelhub/requests");
  if (!response || response->status != 200) throw std::runtime_error("cannot read the request log");
  std::size_t n = 0;
  for (const auto& record : nlohmann::json::parse(response->body)) {
    const auto path = record.at("path").get<std::string>();
    if (path.rfind("/_kernelhub", 0) == 0) continue;  // our own log reads
    if ((method.empty() || record.at("method") == method) && path.find(part) != std::string::npos)
      ++n;
  }
  return n;
}

std::size_t FixtureHub::total_requests() const { return count("", ""); }

bool FixtureHub::wait_for(const std::string& method, const std::string& part, std::size_t n,
                          std::chrono::milliseconds timeout) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(timeout + std::chrono::seconds(5));
  const httplib::Params params{{"method", method},
                               {"part", part},
                               {"count", std::to_string(n)},
                               {"timeout_ms", std::to_string(timeout.count())}};
  const auto response = client.Get("/_kernelhub/requests/wait", params, httplib::Headers{});
  if (!response || response->status != 200)
    throw std::runtime_error("cannot wait on the request log");
  return nlohmann::json::parse(response->body).at("reached").get<bool>();
}

void FixtureHub::reset_requests() const {
  httplib::Client client("127.0.0.1", port_);
  client.Post("/_kernelhub/requests/reset", "", "application/json");
}

CommandResult run_kernelhub(const std::vector<std::string>& args, EnvOverrides env) {
  for (const char* name : {"DIFFUSERS_TRUST_REMOTE_KERNELS", "DIFFUSERS_DISABLE_REMOTE_CODE",
                           "HF_HUB_OFFLINE", "KERNELHUB_POLICY", "HF_TOKEN"}) {
    env.try_emplace(name, "");
  }
  std::vector<std::string> argv{kKernelhub};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, env);
}

std::string sha256_hex_of_file(const std::filesystem::path& path) {
  auto digest = trust::sha256_file_hex(path);
  if (!digest) throw std::runtime_error(digest.error().message);
  return *digest;
}

}  // namespace kernelhub::testing
