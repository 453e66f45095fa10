// The connection limits inside the daemon: which setting wins, and the policy's [daemon]
// idle_timeout_s in force at start and after a reload (the real binary under many uids:
// tests/daemon_integration/connection_limits_test.cpp).
#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "daemon/daemon_harness.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;
using Clock = std::chrono::steady_clock;

TEST_CASE("a limit comes from the flag, else the policy's [daemon] key, else the default",
          "[daemon][limits]") {
  const daemon::DaemonLimits defaults;
  CHECK(defaults.max_connections_per_uid * 4 <= defaults.max_connections);  // well below
  trust::DaemonLimitSettings policy, flags;
  policy.max_connections_per_uid = 8;
  policy.idle_timeout_s = 30;
  flags.idle_timeout_s = 5;
  flags.max_downloads = 3;
  const auto l = daemon::DaemonLimits::resolve(defaults, policy, flags);
  CHECK(l.max_connections == defaults.max_connections);  // neither: default
  CHECK(l.max_connections_per_uid == 8);                 // policy
  CHECK(l.idle_timeout == std::chrono::seconds(5));      // flag over policy
  CHECK(l.max_downloads == 3);                           // flag
  CHECK(l.frame_timeout == defaults.frame_timeout);
}

namespace {

// Milliseconds until the daemon ends an idle, greeted connection, or nullopt if it is still
// open after `wait`.
std::optional<double> idle_close_after(DaemonHarness& h, std::chrono::milliseconds wait,
                                       std::string* code) {
  TestClient client(h.socket);
  if (client.hello().value("type", "") != "hello") return std::nullopt;
  const auto start = Clock::now();
  proto::FrameReader reader(client.fd());
  auto frame = reader.read(wait);
  if (!frame) return std::nullopt;  // timeout: still open
  if (*frame) {
    *code = (*frame)->message.value("code", "");
    auto end = reader.read(std::chrono::seconds(5));
    if (!end || *end) return std::nullopt;  // the close must follow
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

TEST_CASE("the policy's idle_timeout_s closes idle connections, and a reload changes it",
          "[daemon][limits]") {
  DaemonHarness h("[daemon]\nidle_timeout_s = 1\n");
  std::string code;
  const auto closed = idle_close_after(h, std::chrono::seconds(4), &code);
  REQUIRE(closed);
  CHECK(code == "timeout");
  CHECK(*closed >= 900);
  CHECK(*closed < 2500);

  std::ofstream(h.policy_file) << "[daemon]\nidle_timeout_s = 30\n";
  REQUIRE(h.daemon->reload_policy());
  code.clear();
  CHECK_FALSE(idle_close_after(h, std::chrono::milliseconds(2500), &code));
  CHECK(code.empty());
}
