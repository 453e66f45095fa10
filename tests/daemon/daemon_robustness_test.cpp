#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <fstream>
#include <future>

#include "daemon/daemon_harness.hpp"
#include "kernelhub/trust/digest.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;

namespace {

void send_raw(int fd, const std::string& bytes) {
  REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(bytes.size()));
}

std::string header(std::uint32_t length) {
  return {static_cast<char>(length >> 24), static_cast<char>(length >> 16),
          static_cast<char>(length >> 8), static_cast<char>(length)};
}

// The next frame is an error with `code`, then the daemon hangs up.
void expect_error_then_close(TestClient& client, const std::string& code) {
  auto frame = client.read();
  REQUIRE(frame);
  REQUIRE(*frame);
  CHECK((*frame)->message.at("code") == code);
  auto next = client.read();
  CHECK((!next || !*next));
}

void expect_served(const DaemonHarness& h) {
  TestClient client(h.socket);
  client.hello();
  CHECK(client.call({{"type", "status"}, {"id", 1}}).frame.at("type") == "status");
}

}  // namespace

TEST_CASE("bad frames get an error or a closed connection and others are still served",
          "[daemon]") {
  DaemonHarness h;
  {
    TestClient garbage(h.socket);
    garbage.hello();
    send_raw(garbage.fd(), header(9) + "{not json");
    expect_error_then_close(garbage, "malformed_frame");
  }
  {
    TestClient huge(h.socket);
    huge.hello();
    send_raw(huge.fd(), header(0x7fffffff));
    expect_error_then_close(huge, "frame_too_large");
  }
  {
    TestClient cut(h.socket);
    cut.hello();
    send_raw(cut.fd(), header(50) + "{\"type\":");
    ::shutdown(cut.fd(), SHUT_WR);
    expect_error_then_close(cut, "truncated_frame");
  }
  {
    TestClient unknown(h.socket);
    unknown.hello();
    auto reply = unknown.call({{"type", "teleport"}, {"id", 4}});
    CHECK(reply.frame.at("code") == "unknown_request");
    CHECK(reply.frame.at("id") == 4);
    auto invalid = unknown.call({{"type", "fetch"}, {"id", 5}, {"repo", "../x"}, {"version", 1}});
    CHECK(invalid.frame.at("code") == "invalid_request");
    CHECK(unknown.call({{"type", "status"}, {"id", 6}}).frame.at("type") ==
          "status");  // still usable
  }
  {
    TestClient silent(h.socket);
    send_raw(silent.fd(), header(3));  // a header, then the client vanishes
  }
  expect_served(h);
  CHECK(h.daemon->counters().errors >= 5);
}

TEST_CASE("a client that disconnects mid-fetch stops nothing for another waiter and leaks no fd",
          "[daemon]") {
  DaemonHarness h;
  expect_served(h);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::size_t fds_before = open_fd_count();
  testing::FaultPlan stall;
  stall.stall = std::chrono::milliseconds(600);
  stall.path_filter = "lfs-objects";
  h.fx.server->set_faults(stall);
  h.fx.server->reset_requests();
  {
    TestClient quitter(h.socket);
    quitter.hello();
    REQUIRE(proto::send_frame(quitter.fd(), fetch_request(kKernelRepo, 1)));
    auto first = quitter.read();  // progress: the download has started
    REQUIRE(first);
    REQUIRE(*first);
    CHECK((*first)->message.at("type") == "progress");
  }  // gone mid-download
  TestClient stayer(h.socket);
  stayer.hello();
  auto reply = stayer.call(fetch_request(kKernelRepo, 2));
  REQUIRE(reply.frame.at("type") == "fetched");
  for (const auto& file : reply.frame.at("files")) {
    CHECK(trust::sha256_hex(read_fd(reply.fds.at(file.at("fd").get<std::size_t>()).get())) ==
          file.at("sha256"));
  }
  CHECK(h.fx.server->count("GET", "/lfs-objects/") == 1);
  CHECK(h.daemon->counters().misses == 1);
  reply.fds.clear();
  stayer.close();
  for (int i = 0; i < 200 && h.daemon->counters().active_connections > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(h.daemon->counters().active_connections == 0);
  CHECK(open_fd_count() == fds_before);
}

TEST_CASE("verify and gc run through the daemon and the next fetch repairs what verify removed",
          "[daemon]") {
  DaemonHarness h;
  TestClient client(h.socket);
  client.hello();
  auto fetched = client.call(fetch_request(kKernelRepo, 1));
  REQUIRE(fetched.frame.at("type") == "fetched");
  auto clean = client.call({{"type", "verify"}, {"id", 2}});
  CHECK(clean.frame.at("type") == "verified");
  CHECK(clean.frame.at("checked") >= 5);
  CHECK(clean.frame.at("corrupt").empty());

  // Corrupt one blob behind the daemon's back (as root would).
  const auto& so = fetched.frame.at("files");
  std::string etag;
  for (const auto& f : so) {
    if (f.at("size") > 1024 * 1024) etag = f.at("sha256");
  }
  REQUIRE(!etag.empty());
  const auto blob = h.cache_dir / "kernels--kernels-community--demo-fetch" / "blobs" / etag;
  std::filesystem::permissions(blob, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  std::ofstream(blob, std::ios::binary | std::ios::in | std::ios::out) << "X";
  auto dirty = client.call({{"type", "verify"}, {"id", 3}, {"repo", kKernelRepo.str()}});
  REQUIRE(dirty.frame.at("corrupt").size() == 1);
  CHECK(dirty.frame.at("corrupt").at(0).at("blob") == etag);

  auto repaired = client.call(fetch_request(kKernelRepo, 4));
  REQUIRE(repaired.frame.at("type") == "fetched");
  CHECK(repaired.frame.at("from_cache") == false);
  auto gc = client.call({{"type", "gc"}, {"id", 5}});
  CHECK(gc.frame.at("type") == "gc");
  CHECK(gc.frame.at("removed_blobs") == 0);  // everything is referenced by v1
  auto ls = client.call({{"type", "ls"}, {"id", 6}});
  REQUIRE(ls.frame.at("repos").size() == 1);
  CHECK(ls.frame.at("repos").at(0).at("repo") == kKernelRepo.str());
}

TEST_CASE("a client still waiting when kernelhubd stops is answered shutting_down", "[daemon]") {
  // The .so's body stalls past the 5 s shutdown grace (and then comes, so the flight ends);
  // the stall timeout is longer than that.
  DaemonHarness h(std::nullopt, {{"HF_HUB_DOWNLOAD_TIMEOUT", "20"}});
  testing::FaultPlan plan;
  plan.stall = std::chrono::milliseconds(7000);
  plan.path_filter = kSoName;
  h.fx.server->set_faults(plan);
  h.fx.server->reset_requests();
  auto waiting = fetch_async(h.socket, fetch_request(kKernelRepo, 1));
  REQUIRE(h.fx.server->wait_for("GET", "/lfs-objects/", 1, std::chrono::seconds(5)));
  REQUIRE(h.fx.server->count("GET", "/lfs-objects/") == 1);  // the download is under way

  h.daemon->request_stop();
  const auto got = waiting.get();
  INFO((got ? got->first.dump() : got.error().message));
  REQUIRE(got);  // an answer, not a connection closed under it
  CHECK(got->first.at("type") == "error");
  CHECK(got->first.at("id") == 1);
  CHECK(got->first.at("code") == "shutting_down");
  CHECK_THAT(got->first.at("message").get<std::string>(),
             Catch::Contains("kernels-community/demo-fetch v1") &&
                 Catch::Contains("shutdown grace") && Catch::Contains("retry"));
  CHECK(got->second < 6.5);  // the grace (5 s), then at once
}
