// kernelhubd and files that are not what they claim to be (issue 21): a FIFO as the policy
// file or as its [signatures] trusted_root used to hang the daemon (the policy at start-up,
// with the stop signals already blocked; the trusted root at the first fetch, every fetch
// after it, and a SIGHUP kept it). Now the policy and the files it names are checked when it
// is loaded and at each reload: a bad one stops the start, or is refused by the reload with
// the policy in force kept. A FIFO passed as a bundle to import is refused naming its type.
// Every wait is bounded, so a hang fails fast.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <thread>

#include "daemon_integration/workspace.hpp"
#include "kernelhub/proto/messages.hpp"
#include "kernelhub/proto/transport.hpp"

using namespace kernelhub::testing;
namespace fs = std::filesystem;

namespace {

fs::path make_fifo(const fs::path& path) {
  REQUIRE(::mkfifo(path.c_str(), 0644) == 0);
  return path;
}

bool log_contains(const DaemonProcess& daemon, const std::string& text,
                  std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (daemon.log().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::string signatures_policy(const fs::path& root) {
  return "[signatures]\nmode = \"warn\"\ntrusted_root = \"" + root.string() + "\"\n";
}

}  // namespace

TEST_CASE("kernelhubd does not start on a policy, or a policy's trusted root, that is a FIFO",
          "[daemon][files]") {
  Workspace ws;
  const fs::path fifo = make_fifo(ws.dir.path() / "fifo");
  const fs::path policy = ws.dir.path() / "policy.toml";
  std::ofstream(policy) << signatures_policy(fifo);
  for (const auto& given : {fifo, policy}) {
    INFO("--policy " << given);
    DaemonConfig config = ws.config();
    config.policy = given;
    config.log = ws.dir.path() / (given.filename().string() + ".log");
    DaemonProcess daemon(config, /*wait_ready=*/false);
    const auto status = daemon.child().wait(std::chrono::seconds(10));
    INFO(daemon.log());
    REQUIRE(status.has_value());  // exited, rather than waiting on the FIFO for a writer
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 1);
    CHECK_THAT(daemon.log(), Catch::Contains(fifo.string() + " is a FIFO, not a regular file"));
  }
}

TEST_CASE("a reload to a policy whose trusted root is a FIFO keeps the policy in force",
          "[daemon][files]") {
  Workspace ws;
  const fs::path fifo = make_fifo(ws.dir.path() / "fifo");
  const fs::path policy = ws.dir.path() / "policy.toml";
  std::ofstream(policy) << "[daemon]\n";
  DaemonConfig config = ws.config();
  config.policy = policy;
  DaemonProcess daemon(config);

  std::ofstream(policy) << signatures_policy(fifo);
  daemon.child().signal(SIGHUP);
  REQUIRE(log_contains(daemon, "policy reload"));  // done, one way or the other
  CHECK_THAT(daemon.log(), Catch::Contains("policy reload failed, keeping the previous policy") &&
                               Catch::Contains(fifo.string() + " is a FIFO, not a regular file"));

  // Fetches go on under the policy in force (the pinned root, warn), at once.
  WireClient client(ws.socket);
  client.hello();
  client.send_fetch(kRelu, 1);
  std::optional<kernelhub::proto::ReceivedFrame> reply;
  do {
    reply = client.read(std::chrono::seconds(15));  // throws if the daemon hangs
    REQUIRE(reply);
  } while (reply->message.value("type", "") == "progress");
  INFO(reply->message.dump());
  CHECK(reply->message.value("type", "") == "fetched");
  CHECK(check_handout(*reply).empty());
}

TEST_CASE("kernelhubd refuses a FIFO passed as the bundle to import, naming it",
          "[daemon][files]") {
  Workspace ws;
  const fs::path fifo = make_fifo(ws.dir.path() / "fifo");
  DaemonProcess daemon(ws.config());
  // Open for reading and writing: a FIFO end that opens without a peer and never ends.
  const kernelhub::UniqueFd fd(::open(fifo.c_str(), O_RDWR | O_CLOEXEC));
  REQUIRE(fd);
  WireClient client(ws.socket);
  client.hello();
  kernelhub::proto::ImportRequest request;
  request.id = 7;
  const std::array<int, 1> fds{fd.get()};
  REQUIRE(kernelhub::proto::send_frame(client.fd(), kernelhub::proto::to_json(request), fds));
  const auto reply = client.read(std::chrono::seconds(10));
  REQUIRE(reply);
  INFO(reply->message.dump());
  CHECK(reply->message.value("type", "") == "error");
  CHECK(reply->message.value("code", "") == "invalid_request");
  CHECK_THAT(reply->message.value("message", ""), Catch::Contains("the bundle is a FIFO"));
}
