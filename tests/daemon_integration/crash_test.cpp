// Crash consistency of the daemon's cache: SIGKILL in the middle of a download, and a
// SIGKILL injected by strace at the N-th write, fsync, rename or symlink of a publish. After
// each crash a restarted daemon must find no partial object (every blob hashes to its name,
// every snapshot link has its blob, every ref names a complete snapshot), no temps, and the
// next fetch must hand out the reference bytes.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <thread>

#include "tests/daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool have_strace() { return run_command({"/bin/sh", "-c", "command -v strace"}).exit_code == 0; }

std::vector<std::string> without_temps(std::vector<std::string> problems) {
  std::erase_if(problems, [](const std::string& p) { return p.rfind("leftover temp", 0) == 0; });
  return problems;
}

// Restart on the same cache, then: consistent, swept, and a fetch gives the reference.
void check_recovery(const Workspace& ws, const std::map<std::string, std::string>& reference,
                    const std::string& what) {
  INFO(what);
  auto config = ws.config();
  config.log = ws.dir.path() / "restarted.log";
  DaemonProcess restarted(config);
  const auto problems = check_cache(ws.cache, kRepoFolder, reference);
  INFO(Catch::Detail::stringify(problems));
  CHECK(problems.empty());
  WireClient client(ws.socket);
  client.hello();
  const auto fetched = client.fetch(kRelu, 1);
  INFO(fetched.message.dump());
  REQUIRE(fetched.message.at("type") == "fetched");
  const auto handout = check_handout(fetched, reference);
  INFO(Catch::Detail::stringify(handout));
  CHECK(handout.empty());
  CHECK(check_cache(ws.cache, kRepoFolder, reference).empty());
}

// How many times a cold fetch makes `syscall` in the daemon (all threads together).
std::size_t count_syscalls(const Workspace& ws, const std::string& syscall) {
  const auto trace = ws.dir.path() / ("count-" + syscall + ".trace");
  auto config = ws.config();
  config.cache = ws.dir.path() / ("count-cache-" + syscall);
  config.socket = ws.dir.path() / "count.sock";
  config.log = ws.dir.path() / "count.log";
  config.wrapper = {"strace", "-f", "-qq", "-o", trace.string(), "-e", "trace=" + syscall};
  {
    DaemonProcess daemon(config);
    WireClient client(config.socket);
    client.hello();
    REQUIRE(client.fetch(kRelu, 1).message.at("type") == "fetched");
    daemon.stop();
  }
  std::ifstream in(trace);
  const std::regex call("(^|\\s)" + syscall + "\\(");
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) n += std::regex_search(line, call) ? 1 : 0;
  return n;
}

// A SIGKILL at the N-th `syscall` for a spread of N over what a cold fetch makes.
void crash_at_each(const std::string& syscall) {
  if (!have_strace()) {
    WARN("SKIPPED: strace is not installed");
    return;
  }
  Workspace ws;
  const auto reference = ws.reference();
  const auto total = count_syscalls(ws, syscall);
  INFO(syscall << " calls in a cold fetch: " << total);
  std::vector<std::size_t> points;
  constexpr std::size_t kMaxPoints = 8;  // bounded: each point is two daemon starts
  for (std::size_t i = 0; i < std::min(total, kMaxPoints); ++i) {
    points.push_back(total <= kMaxPoints ? i + 1 : 1 + i * (total - 1) / (kMaxPoints - 1));
  }
  int crashed = 0;
  for (const auto n : points) {
    fs::remove_all(ws.cache);
    auto config = ws.config();
    config.log = ws.dir.path() / "injected.log";
    config.wrapper = {"strace",
                      "-f",
                      "-qq",
                      "-o",
                      "/dev/null",
                      "-e",
                      "trace=" + syscall,
                      "-e",
                      "inject=" + syscall + ":signal=KILL:when=" + std::to_string(n)};
    DaemonProcess injected(config, /*wait_ready=*/false);
    // It may die before listening (a start-up write) or while serving our fetch.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (injected.child().running() &&
           !wait_for_listener(ws.socket, std::chrono::milliseconds(100)) &&
           std::chrono::steady_clock::now() < deadline) {
    }
    if (injected.child().running()) {
      try {
        WireClient client(ws.socket);
        client.hello();
        (void)client.fetch(kRelu, 1);
      } catch (const std::exception&) {
        // the daemon died under us: that is the point
      }
    }
    // Give a dying daemon time to go; a survivor (N past its calls) is stopped normally.
    if (injected.child().wait(std::chrono::seconds(2))) {
      ++crashed;
    } else {
      injected.stop();
    }
    const auto before = without_temps(check_cache(ws.cache, kRepoFolder, reference));
    INFO("crash at " << syscall << " #" << n << ": " << Catch::Detail::stringify(before));
    CHECK(before.empty());  // even before any recovery, nothing partial is visible
    check_recovery(ws, reference, "after " + syscall + " #" + std::to_string(n));
  }
  if (total == 0)
    WARN("kernelhubd makes no " << syscall << " call in a cold fetch: nothing to inject");
  CHECK((total == 0 || crashed > 0));
}

}  // namespace

TEST_CASE("kill -9 of the daemon mid-download leaves no partial object and the next fetch succeeds",
          "[daemon][crash]") {
  Workspace ws;
  const auto reference = ws.reference();
  set_hub_faults(ws.hub, {{"stall_ms", 3000}, {"path_filter", ".so"}});
  ws.hub.reset_requests();
  {
    DaemonProcess daemon(ws.config());
    WireClient client(ws.socket);
    client.hello();
    client.send_fetch(kRelu, 1);
    REQUIRE(wait_for_upstream_get(ws.hub, ".so"));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    daemon.child().signal(SIGKILL);
    REQUIRE(daemon.child().wait(std::chrono::seconds(5)));
    // The client sees the connection end, never a `fetched`.
    std::optional<kernelhub::proto::ReceivedFrame> frame;
    try {
      while ((frame = client.read(std::chrono::seconds(5))) &&
             frame->message.value("type", "") == "progress") {
      }
    } catch (const std::exception&) {
      frame.reset();
    }
    CHECK((!frame || frame->message.value("type", "") != "fetched"));
  }
  const auto before = without_temps(check_cache(ws.cache, kRepoFolder, reference));
  INFO(Catch::Detail::stringify(before));
  CHECK(before.empty());
  CHECK(!fs::exists(ws.cache / kRepoFolder / "refs" / "v1"));
  set_hub_faults(ws.hub, json::object());
  check_recovery(ws, reference, "after kill -9 mid-download");
}

TEST_CASE("crash injected at each write of a publish", "[daemon][crash][strace]") {
  crash_at_each("write");
}
TEST_CASE("crash injected at each pwrite64 of a publish", "[daemon][crash][strace]") {
  crash_at_each("pwrite64");
}
TEST_CASE("crash injected at each fsync of a publish", "[daemon][crash][strace]") {
  crash_at_each("fsync");
}
TEST_CASE("crash injected at each rename of a publish", "[daemon][crash][strace]") {
  crash_at_each("rename");
}
TEST_CASE("crash injected at each renameat2 of a publish", "[daemon][crash][strace]") {
  crash_at_each("renameat2");
}
TEST_CASE("crash injected at each symlink of a publish", "[daemon][crash][strace]") {
  crash_at_each("symlink");
}
TEST_CASE("crash injected at each symlinkat of a publish", "[daemon][crash][strace]") {
  crash_at_each("symlinkat");
}
