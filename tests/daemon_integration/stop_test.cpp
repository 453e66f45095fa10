// A daemon that goes away under a request: the client says kernelhubd went away and to retry
// (shutting_down, exit 6), not that a connection closed.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <thread>

#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
namespace fs = std::filesystem;

TEST_CASE("kernelhub download whose daemon dies mid-request reports shutting_down",
          "[daemon][stop]") {
  Workspace ws;
  auto config = ws.config();
  config.log = ws.dir.path() / "daemon.log";
  DaemonProcess daemon(config);
  set_hub_faults(ws.hub, {{"stall_ms", 20000}, {"path_filter", ".so"}});
  ws.hub.reset_requests();
  const fs::path log = ws.dir.path() / "cli.log";
  Child cli({std::string(KH_BIN_DIR) + "/kernelhub", "download", kRelu, "--version", "1",
             "--variant", KH_FIXTURE_VARIANT},
            {{"HF_ENDPOINT", ws.hub.endpoint()},
             {"KERNELHUB_SOCKET", ws.socket.string()},
             {"KERNELHUB_REQUIRE_DAEMON", "1"},
             {"DIFFUSERS_TRUST_REMOTE_KERNELS", ""},
             {"DIFFUSERS_DISABLE_REMOTE_CODE", ""}},
            log);
  // The fault: the daemon is in the middle of this client's download when it dies.
  REQUIRE(ws.hub.wait_for("GET", ".so", 1, std::chrono::seconds(10)));
  daemon.child().signal(SIGKILL);

  const auto status = cli.wait(std::chrono::seconds(20));
  REQUIRE(status);
  const std::string err = slurp(log);
  INFO(err);
  REQUIRE(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 6);
  CHECK_THAT(err, Catch::Contains("kernelhub: shutting_down: kernelhubd on " + ws.socket.string()));
  CHECK_THAT(err, Catch::Contains("went away before answering") && Catch::Contains("retry"));
}
