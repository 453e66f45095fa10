// The same `kernelhub download` selects the same variant with and without kernelhubd, for
// several torch versions: the client detects its platform and sends it, and the daemon's own
// environment (another KERNELHUB_TORCH_VERSION, no torch at all) changes nothing.
#include <sys/utsname.h>
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "client/daemon_fixture.hpp"

namespace fs = std::filesystem;
using namespace kernelhub::testing;
using nlohmann::json;

namespace {

const std::string kRepo = "kernels-community/multi-torch";

std::string machine() {
  utsname u{};
  REQUIRE(::uname(&u) == 0);
  return u.machine;
}

// "215" from the fixture variant: the torch of the project venv.
std::string venv_torch() {
  const std::string variant = KH_FIXTURE_VARIANT;
  REQUIRE(variant.rfind("torch", 0) == 0);
  return variant.substr(5, variant.find('-') - 5);
}

std::string variant_for(const std::string& torch) {
  return "torch" + torch + "-cxx11-cpu-" + machine() + "-linux";
}

// A store of our own with one repo whose v1 has CPU builds for torch 2.13, 2.14, 2.15 and the
// venv's torch.
class MultiTorchHub {
 public:
  MultiTorchHub() {
    const auto src = dir_.path() / "src";
    for (const std::string& torch :
         {std::string("213"), std::string("214"), std::string("215"), venv_torch()}) {
      const auto variant = src / "build" / variant_for(torch);
      fs::create_directories(variant);
      std::ofstream(variant / "__init__.py") << "# built for torch " << torch << "\n";
    }
    const auto store = dir_.path() / "store";
    const auto published = run_command({kKernelhub, "publish", "--root", store.string(), "--repo",
                                        kRepo, "--branch", "v1", src.string()});
    INFO(published.err);
    REQUIRE(published.exit_code == 0);
    const auto port_file = dir_.path() / "port";
    server_ = std::make_unique<BackgroundProcess>(std::vector<std::string>{
        kKernelhub, "serve", "--root", store.string(), "--port-file", port_file.string()});
    endpoint_ = "http://127.0.0.1:" + std::to_string(std::stoi(wait_for_file(port_file)));
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  TempDir dir_;
  std::unique_ptr<BackgroundProcess> server_;
  std::string endpoint_;
};

// kernelhubd with a platform environment of its own that must not matter.
class Daemon {
 public:
  Daemon(const MultiTorchHub& hub, const EnvOverrides& own_env)
      : socket_(dir_.path() / "kernelhub.sock") {
    EnvOverrides env{
        {"HF_ENDPOINT", hub.endpoint()}, {"LISTEN_FDS", ""},     {"LISTEN_PID", ""},
        {"KERNELHUB_POLICY", ""},        {"HF_HUB_OFFLINE", ""}, {"KERNELHUB_TORCH_VERSION", ""},
        {"KERNELHUB_BACKEND", ""}};
    for (const auto& [k, v] : own_env) env[k] = v;
    fs::create_directories(dir_.path() / "cache");
    daemon_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{kKernelhubd, "--socket", socket_.string(), "--cache-dir",
                                 (dir_.path() / "cache").string()},
        env);
    REQUIRE(wait_for_listener(socket_));
  }
  const fs::path& socket() const { return socket_; }

 private:
  TempDir dir_;
  fs::path socket_;
  std::unique_ptr<BackgroundProcess> daemon_;
};

json download(const MultiTorchHub& hub, const fs::path& socket, const fs::path& cache,
              const std::vector<std::string>& extra_args, const EnvOverrides& extra_env) {
  std::vector<std::string> args{"download", kRepo, "--version", "1", "--json"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  EnvOverrides env{{"HF_ENDPOINT", hub.endpoint()},
                   {"HF_HUB_CACHE", cache.string()},
                   {"KERNELS_CACHE", ""},
                   {"KERNELHUB_SOCKET", socket.string()},
                   {"KERNELHUB_REQUIRE_DAEMON", ""},
                   {"KERNELHUB_TORCH_VERSION", ""},
                   {"KERNELHUB_BACKEND", ""},
                   {"VIRTUAL_ENV", ""}};
  for (const auto& [k, v] : extra_env) env[k] = v;
  const auto result = run_kernelhub(args, env);
  INFO("stdout: " << result.out << "\nstderr: " << result.err);
  REQUIRE(result.exit_code == 0);
  return json::parse(result.out);
}

}  // namespace

TEST_CASE("with and without kernelhubd, the client's torch picks the variant",
          "[cli][daemon][platform]") {
  const MultiTorchHub hub;
  TempDir dir;
  // The daemon's own environment names a torch no client here runs.
  const Daemon daemon(hub, {{"KERNELHUB_TORCH_VERSION", "2.14"}, {"VIRTUAL_ENV", ""}});
  const auto none = dir.path() / "none.sock";

  struct Case {
    const char* torch;
    std::vector<std::string> args;
    EnvOverrides env;
  };
  const std::vector<Case> cases{
      {"213", {}, {{"KERNELHUB_TORCH_VERSION", "2.13"}}},
      {"215", {}, {{"KERNELHUB_TORCH_VERSION", "2.15.0+cpu"}}},
      {"213", {"--torch-version", "2.13", "--backend", "cpu"}, {}},
  };
  for (const auto& c : cases) {
    INFO("torch " << c.torch);
    const auto embedded = download(hub, none, dir.path() / "user-cache", c.args, c.env);
    const auto served = download(hub, daemon.socket(), dir.path() / "user-cache", c.args, c.env);
    CHECK(embedded["via_daemon"] == false);
    CHECK(served["via_daemon"] == true);
    CHECK(embedded["variants"] == json::array({variant_for(c.torch)}));
    CHECK(served["variants"] == embedded["variants"]);
  }
}

TEST_CASE("without overrides the torch of the client's python decides, in both modes",
          "[cli][daemon][platform]") {
  // ctest gives every test KERNELHUB_PYTHON, the project venv's python (torch 2.15 here); the
  // daemon runs with none of it, and a torch of its own that would pick another variant.
  const MultiTorchHub hub;
  TempDir dir;
  const Daemon daemon(hub, {{"KERNELHUB_TORCH_VERSION", "2.13"}, {"KERNELHUB_PYTHON", ""}});
  const auto embedded = download(hub, dir.path() / "none.sock", dir.path() / "c", {}, {});
  const auto served = download(hub, daemon.socket(), dir.path() / "c", {}, {});
  CHECK(served["via_daemon"] == true);
  CHECK(embedded["variants"] == json::array({variant_for(venv_torch())}));
  CHECK(served["variants"] == embedded["variants"]);
}
