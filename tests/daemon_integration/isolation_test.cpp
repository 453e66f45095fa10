// Who may do what: another uid cannot change anything in the daemon's cache, the admin
// policy decides who is served (from SO_PEERCRED, whatever a request claims), what a
// client may opt into, and a SIGHUP-reloaded policy applies at the next hand-out.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kNobody = "65534";

// Runs argv as uid/gid 65534 with no supplementary groups; needs root.
CommandResult run_as_nobody(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"/usr/bin/setpriv", std::string("--reuid=") + kNobody,
                             std::string("--regid=") + kNobody, "--clear-groups"});
  return run_command(
      argv, {{"DIFFUSERS_TRUST_REMOTE_KERNELS", ""}, {"DIFFUSERS_DISABLE_REMOTE_CODE", ""}});
}

bool can_switch_uid() { return ::geteuid() == 0 && fs::exists("/usr/bin/setpriv"); }

void write_policy(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string error_code(const kernelhub::proto::ReceivedFrame& frame) {
  return frame.message.value("type", "") == "error" ? frame.message.value("code", "")
                                                    : "(" + frame.message.value("type", "") + ")";
}

}  // namespace

TEST_CASE("another uid cannot write, rename, unlink or replace anything in the daemon cache",
          "[daemon][isolation]") {
  if (!can_switch_uid()) {
    FAIL("needs root and setpriv to act as another uid (a test that cannot run fails)");
  }
  Workspace ws;
  DaemonProcess daemon(ws.config());
  {
    WireClient client(ws.socket);
    client.hello();
    REQUIRE(client.fetch(kRelu, 1).message.at("type") == "fetched");
  }
  // The cache belongs to the daemon's uid (root here): dirs 0755 at most, files 0444.
  for (const auto& entry : fs::recursive_directory_iterator(ws.cache)) {
    struct stat st {};
    REQUIRE(::lstat(entry.path().c_str(), &st) == 0);
    INFO(entry.path());
    CHECK(st.st_uid == 0);
    if (S_ISDIR(st.st_mode)) CHECK((st.st_mode & 0022) == 0);
    if (S_ISREG(st.st_mode) && entry.path().parent_path().filename() == "blobs")
      CHECK((st.st_mode & 07777) == 0444);
  }

  const auto tamper = run_as_nobody({kProbe, "tamper", ws.cache.string()});
  INFO(tamper.err);
  REQUIRE(tamper.exit_code == 0);
  const auto report = json::parse(tamper.out);
  CHECK(report.at("euid") == 65534);
  REQUIRE(report.at("attempts").size() > 20);
  for (const auto& attempt : report.at("attempts")) {
    INFO(attempt.dump());
    const auto result = attempt.at("result").get<std::string>();
    CHECK((result == "EACCES" || result == "EPERM"));
  }

  // Nothing changed: the daemon still hands out the same verified bytes, also to that uid.
  const auto as_nobody = run_as_nobody({kProbe, "fetch", ws.socket.string(), kRelu, "1", kVariant});
  INFO(as_nobody.out << as_nobody.err);
  REQUIRE(as_nobody.exit_code == 0);
  const auto fetched = json::parse(as_nobody.out);
  for (const auto& [path, f] : fetched.at("files").items()) {
    CHECK(f.at("fd_sha256") == f.at("sha256"));
    CHECK(f.at("read_only") == true);
  }
  CHECK(check_cache(ws.cache, kRepoFolder, {}).empty());
}

TEST_CASE("a uid the policy does not allow is refused even when the request claims uid 0",
          "[daemon][isolation]") {
  if (!can_switch_uid()) {
    FAIL("needs root and setpriv to act as another uid (a test that cannot run fails)");
  }
  Workspace ws;
  const auto policy = ws.dir.path() / "policy.toml";
  write_policy(policy, "[daemon]\nallow_users = [\"root\"]\n");
  auto config = ws.config();
  config.policy = policy;
  DaemonProcess daemon(config);

  const auto denied = run_as_nobody({kProbe, "fetch", ws.socket.string(), kRelu, "1", kVariant});
  INFO(denied.out << denied.err);
  CHECK(denied.exit_code == 1);
  CHECK(json::parse(denied.out).at("code") == "permission_denied");

  // hello and fetch both say uid 0 / root; only SO_PEERCRED counts.
  const auto claimed =
      run_as_nobody({kProbe, "claim-root", ws.socket.string(), kRelu, "1", kVariant});
  INFO(claimed.out << claimed.err);
  REQUIRE(claimed.exit_code == 0);
  const auto frames = json::parse(claimed.out).at("frames");
  REQUIRE(!frames.empty());
  CHECK(frames.at(0).at("type") == "error");
  CHECK(frames.at(0).at("code") == "permission_denied");
  for (const auto& frame : frames) CHECK(frame.at("type") != "fetched");
  CHECK(!fs::exists(ws.cache / kRepoFolder / "snapshots"));

  // The same claims from an allowed uid change nothing either: root is served as root.
  WireClient root(ws.socket);
  CHECK(root.hello().at("type") == "hello");
  const auto ok = root.fetch(kRelu, 1, {{"USER", "nobody"}}, {{"uid", 65534}, {"gid", 65534}});
  CHECK(ok.message.at("type") == "fetched");
  CHECK(check_handout(ok).empty());
}

TEST_CASE("policy through the daemon: admin opt-in limits, the client's DISABLE, and SIGHUP reload",
          "[daemon][policy]") {
  Workspace ws;
  const auto policy = ws.dir.path() / "policy.toml";
  write_policy(policy, "[trust]\nallow_any_opt_in = false\nopt_in = []\n");
  auto config = ws.config();
  config.policy = policy;
  DaemonProcess daemon(config);
  WireClient client(ws.socket);
  client.hello();
  const json trust{{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}};

  // The admin allows no opt-in: the client's variable does not open SageAttention.
  auto sage = client.fetch(kSage, 1, trust);
  CHECK(error_code(sage) == "untrusted_publisher");
  CHECK(!fs::exists(ws.cache / "kernels--SageAttention--relu" / "snapshots"));

  // A client's DISABLE refuses even the trusted publisher, cached or not.
  CHECK(error_code(client.fetch(kRelu, 1, {{"DIFFUSERS_DISABLE_REMOTE_CODE", "1"}})) ==
        "remote_code_disabled");
  CHECK(client.fetch(kRelu, 1).message.at("type") == "fetched");
  CHECK(error_code(client.fetch(kRelu, 1, {{"DIFFUSERS_DISABLE_REMOTE_CODE", "true"}})) ==
        "remote_code_disabled");
  // ... and only that client's requests: the next one without it is served.
  CHECK(client.fetch(kRelu, 1).message.at("type") == "fetched");

  // SIGHUP: the admin now lets clients opt into SageAttention.
  write_policy(policy, "[trust]\nallow_any_opt_in = false\nopt_in = [\"SageAttention\"]\n");
  daemon.child().signal(SIGHUP);
  std::string code;
  for (int i = 0; i < 100; ++i) {
    sage = client.fetch(kSage, 1, trust);
    code = error_code(sage);
    if (code == "(fetched)") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  INFO(daemon.log());
  CHECK(code == "(fetched)");
  CHECK(check_handout(sage).empty());
  // Still only with the client's opt-in.
  CHECK(error_code(client.fetch(kSage, 1)) == "untrusted_publisher");

  // And back: the kernel is cached now, yet the next hand-out follows the reloaded policy.
  write_policy(policy, "[trust]\nallow_any_opt_in = false\nopt_in = []\n");
  daemon.child().signal(SIGHUP);
  for (int i = 0; i < 100; ++i) {
    code = error_code(client.fetch(kSage, 1, trust));
    if (code == "untrusted_publisher") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(code == "untrusted_publisher");

  // A policy file that does not parse keeps the previous policy in force.
  write_policy(policy, "[trust]\nallow_any_opt_in = maybe\n");
  daemon.child().signal(SIGHUP);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(daemon.child().running());
  CHECK(error_code(client.fetch(kSage, 1, trust)) == "untrusted_publisher");
  CHECK(client.fetch(kRelu, 1).message.at("type") == "fetched");
}
