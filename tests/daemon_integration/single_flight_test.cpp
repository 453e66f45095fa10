// Many clients, one download: concurrent fetches of an uncached kernel share one upstream
// transfer, and a client that hangs up mid-fetch neither stops it nor leaks a descriptor.
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Each file of the reference was transferred exactly once (resolve, and LFS object if any).
void check_one_get_per_file(const FixtureHub& hub,
                            const std::map<std::string, std::string>& reference) {
  for (const auto& [path, sha] : reference) {
    INFO(path);
    CHECK(hub.count("GET", "/" + path) == 1);
    CHECK(hub.count("GET", "/lfs-objects/" + sha) <= 1);
  }
}

}  // namespace

TEST_CASE(
    "32 client processes fetching one uncached kernel cause one GET per file and get identical "
    "bytes",
    "[daemon][single-flight]") {
  Workspace ws;
  const auto reference = ws.reference();
  DaemonProcess daemon(ws.config());
  // Hold the big file's transfer open so all 32 requests arrive while it is in flight.
  set_hub_faults(ws.hub, {{"stall_ms", 1500}, {"path_filter", ".so"}});
  ws.hub.reset_requests();

  constexpr int kClients = 32;
  std::vector<std::unique_ptr<Child>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Child>(
        std::vector<std::string>{kProbe, "fetch", ws.socket.string(), kRelu, "1", kVariant},
        EnvOverrides{{"DIFFUSERS_TRUST_REMOTE_KERNELS", ""}, {"DIFFUSERS_DISABLE_REMOTE_CODE", ""}},
        ws.dir.path() / ("client-" + std::to_string(i) + ".json")));
  }
  std::set<std::string> distinct;
  for (int i = 0; i < kClients; ++i) {
    const auto status = clients[i]->wait(std::chrono::seconds(60));
    REQUIRE(status);
    const auto out = slurp(ws.dir.path() / ("client-" + std::to_string(i) + ".json"));
    INFO("client " << i << ": " << out);
    REQUIRE(WIFEXITED(*status));
    REQUIRE(WEXITSTATUS(*status) == 0);
    const auto result = json::parse(out);
    CHECK(result.at("via_daemon") == true);
    json digests = json::object();
    for (const auto& [path, f] : result.at("files").items()) {
      // The bytes each process read through its own fd match the verified manifest...
      CHECK(f.at("fd_sha256") == f.at("sha256"));
      CHECK(f.at("fd_size") == f.at("size"));
      CHECK(f.at("read_only") == true);
      digests[path] = f.at("fd_sha256");
    }
    // ... and a clean daemon's hand-out, file for file.
    CHECK(digests.size() == reference.size());
    for (const auto& [path, sha] : reference) CHECK(digests.value(path, "") == sha);
    distinct.insert(digests.dump());
  }
  CHECK(distinct.size() == 1);
  check_one_get_per_file(ws.hub, reference);
}

TEST_CASE("a client that hangs up mid-fetch does not stop the download for others and leaks no fd",
          "[daemon][single-flight]") {
  Workspace ws;
  const auto reference = ws.reference();
  DaemonProcess daemon(ws.config());
  const auto pid = daemon_pid(ws.socket);
  // Warm the daemon's own lazily opened resources (cache root fd, HTTP handles) first.
  {
    WireClient warm(ws.socket);
    warm.hello();
    (void)warm.fetch(kSage, 1, {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}});
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto fds_before = fd_count(pid);
  set_hub_faults(ws.hub, {{"stall_ms", 1500}, {"path_filter", ".so"}});
  ws.hub.reset_requests();

  WireClient quitter(ws.socket);
  quitter.hello();
  quitter.send_fetch(kRelu, 1);
  WireClient stayer(ws.socket);
  stayer.hello();
  stayer.send_fetch(kRelu, 1);
  // Wait until the download is under way, then the first client goes away.
  REQUIRE(wait_for_upstream_get(ws.hub, ".so"));
  quitter.close();

  std::optional<kernelhub::proto::ReceivedFrame> final;
  while (auto frame = stayer.read(std::chrono::seconds(30))) {
    if (frame->message.value("type", "") != "progress") {
      final = std::move(frame);
      break;
    }
  }
  REQUIRE(final);
  INFO(final->message.dump());
  REQUIRE(final->message.at("type") == "fetched");
  const auto problems = check_handout(*final, reference);
  INFO(Catch::Detail::stringify(problems));
  CHECK(problems.empty());
  for (const auto& [path, sha] : reference) CHECK(ws.hub.count("GET", "/" + path) == 1);

  final.reset();
  stayer.close();
  // Connections are torn down asynchronously; give the daemon a moment to close them.
  std::size_t fds_after = 0;
  for (int i = 0; i < 100; ++i) {
    fds_after = fd_count(pid);
    if (fds_after <= fds_before) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(fds_after == fds_before);
  CHECK(daemon.child().running());
}
