// No local user can lock the others out of kernelhubd: idle connections are closed after the
// idle timeout, a frame trickled in is cut off at the frame timeout, one uid holds at most
// max_connections_per_uid connections (root exempt), and at most max_downloads flights
// download at once while the others wait their turn.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
using nlohmann::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

bool can_switch_uid() { return ::geteuid() == 0 && fs::exists("/usr/bin/setpriv"); }

std::vector<std::string> as_uid(int uid, std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=" + std::to_string(uid),
                             "--regid=" + std::to_string(uid), "--clear-groups"});
  return argv;
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The JSON lines a probe has printed so far.
std::vector<json> lines_of(const fs::path& log) {
  std::ifstream in(log);
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) {
    auto parsed = json::parse(line, nullptr, false);
    if (parsed.is_object()) out.push_back(std::move(parsed));
  }
  return out;
}

// Waits (up to `timeout`) for the probe's line with "phase": `phase`.
json wait_for_phase(const fs::path& log, const std::string& phase,
                    std::chrono::seconds timeout = std::chrono::seconds(30)) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    for (const auto& line : lines_of(log))
      if (line.value("phase", "") == phase) return line;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return nullptr;
}

// Active connections as a fresh connection's status sees them (itself included).
std::uint64_t active_connections(const Workspace& ws) {
  WireClient probe(ws.socket);
  probe.hello();
  return probe.status().at("counters").at("active_connections").get<std::uint64_t>();
}

// Waits until the daemon has `want` active connections (a closing thread lags a little).
bool wait_active(const Workspace& ws, std::uint64_t want) {
  for (int i = 0; i < 100; ++i) {
    if (active_connections(ws) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The daemon's first frame on a new connection after hello. A refused connection may be
// closed before our hello goes out (EPIPE); its error frame is still there to read.
json hello_answer(WireClient& client) {
  try {
    return client.hello();
  } catch (const std::exception&) {
    auto frame = client.read(std::chrono::seconds(10));
    return frame ? frame->message : json(nullptr);
  }
}

const EnvOverrides kNoTrustEnv{{"DIFFUSERS_TRUST_REMOTE_KERNELS", ""},
                               {"DIFFUSERS_DISABLE_REMOTE_CODE", ""}};

// Another (non-root) uid fetches the fixture kernel through the client library; returns the
// wall time of the whole process and whether the fetch succeeded.
std::pair<double, bool> fetch_as(int uid, const Workspace& ws) {
  const auto start = Clock::now();
  const auto r =
      run_command(as_uid(uid, {kProbe, "fetch", ws.socket.string(), kRelu, "1", kVariant}),
                  kNoTrustEnv, std::chrono::seconds(30));
  const double ms = ms_since(start);
  UNSCOPED_INFO("fetch as uid " << uid << ": " << r.out << r.err);
  return {ms, r.exit_code == 0 && json::parse(r.out, nullptr, false).value("ok", false)};
}

constexpr int kIdler = 65534;  // opens the idle connections

// The idler's "open" line: its refused connections got busy, naming its uid, the policy key
// and the flag that raise the limit.
void check_per_uid_refusal(const json& opened) {
  CHECK(opened.at("refusal").at("code") == "busy");
  const auto why = opened.at("refusal").at("message").get<std::string>();
  CHECK(why.find("uid " + std::to_string(kIdler)) != std::string::npos);
  CHECK(why.find("max_connections_per_uid") != std::string::npos);
  CHECK(why.find("--max-connections-per-uid") != std::string::npos);
}
constexpr int kOther = 65533;  // must still be served

}  // namespace

TEST_CASE(
    "one uid opening 300 idle connections locks no other uid out: the per-uid cap refuses the "
    "rest with busy (or, caps raised, all are accepted), and the idle timeout closes the "
    "accepted ones",
    "[daemon][limits]") {
  struct Case {
    const char* name;
    std::vector<std::string> caps;
    int accepted;
    double max_close_ms;
  };
  const auto c = GENERATE(values<Case>({
      {"default caps: 256 in all, 32 per uid", {}, 32, 5000},
      {"caps raised", {"--max-connections", "512", "--max-connections-per-uid", "400"}, 300, 6000},
  }));
  INFO(c.name);
  REQUIRE(can_switch_uid());  // needs root and setpriv to act as two other uids
  Workspace ws;
  auto config = ws.config();
  config.extra_args = {"--idle-timeout", "3"};
  config.extra_args.insert(config.extra_args.end(), c.caps.begin(), c.caps.end());
  DaemonProcess daemon(config);
  // Only the counting connection itself, once the start-up probe's thread has ended.
  const std::uint64_t baseline = 1;
  REQUIRE(wait_active(ws, baseline));

  const auto log = ws.dir.path() / "idler.json";
  Child idler(as_uid(kIdler, {kProbe, "hold-idle", ws.socket.string(), "300", "20"}), {}, log);
  const auto opened = wait_for_phase(log, "open");
  INFO(opened.dump());
  // Setup: 300 sockets really connected; the daemon kept what its cap allows and told the
  // rest why not.
  REQUIRE(opened.is_object());
  REQUIRE(opened.at("connected") == 300);
  REQUIRE(opened.at("accepted") == c.accepted);
  CHECK(opened.at("refused") == 300 - c.accepted);
  if (c.accepted < 300) check_per_uid_refusal(opened);
  REQUIRE(wait_active(ws, baseline + c.accepted));

  // While they are open, another uid is served: a real download of the fixture kernel.
  const auto [served_ms, served] = fetch_as(kOther, ws);
  CHECK(served);
  WARN(c.name << ": uid " << kOther << " served (process start to verified fds) in " << served_ms
              << " ms while uid " << kIdler << " held its idle connections");
  CHECK(served_ms < 2000);
  // ... and the idle ones were still open after it: it was served alongside them.
  CHECK(active_connections(ws) == baseline + c.accepted);

  // After the idle timeout each accepted connection got `timeout` and the end of stream.
  const auto closed = wait_for_phase(log, "closed");
  INFO(closed.dump());
  REQUIRE(closed.is_object());
  CHECK(closed.at("closed") == c.accepted);
  CHECK(closed.at("still_open") == 0);
  CHECK(closed.at("idle_errors") == c.accepted);
  CHECK(closed.at("min_ms").get<double>() >= 2900);
  CHECK(closed.at("max_ms").get<double>() < c.max_close_ms);
  CHECK(wait_active(ws, baseline));
  CHECK(daemon.child().running());
  REQUIRE(idler.wait(std::chrono::seconds(10)));
}

TEST_CASE(
    "the per-uid and total caps refuse with a typed busy error naming the limit, root is exempt "
    "from the per-uid cap, and a freed slot can be used again",
    "[daemon][limits]") {
  REQUIRE(can_switch_uid());
  Workspace ws;
  auto config = ws.config();
  config.extra_args = {"--max-connections-per-uid", "3", "--max-connections", "8"};
  DaemonProcess daemon(config);

  // uid 65534: three accepted, the fourth refused before hello is even read.
  const auto log = ws.dir.path() / "idler.json";
  {
    Child idler(as_uid(kIdler, {kProbe, "hold-idle", ws.socket.string(), "4", "1"}), {}, log);
    const auto opened = wait_for_phase(log, "open");
    INFO(opened.dump());
    REQUIRE(opened.is_object());
    REQUIRE(opened.at("connected") == 4);
    CHECK(opened.at("accepted") == 3);
    CHECK(opened.at("refused") == 1);
    check_per_uid_refusal(opened);
    REQUIRE(idler.wait(std::chrono::seconds(10)));
  }
  // Its slots are free again once it is gone: the client library gets in as that uid.
  REQUIRE(wait_active(ws, 1));
  const auto again = run_command(
      as_uid(kIdler, {kProbe, "fetch", ws.socket.string(), kRelu, "1", kVariant}), kNoTrustEnv);
  INFO(again.out << again.err);
  CHECK(again.exit_code == 0);

  // Root is not held to 3: eight root connections are served...
  std::vector<std::unique_ptr<WireClient>> roots;
  for (int i = 0; i < 8; ++i) {
    roots.push_back(std::make_unique<WireClient>(ws.socket));
    CHECK(hello_answer(*roots.back()).at("type") == "hello");
  }
  // ... and the ninth connection of all is over max_connections: busy, naming that limit.
  WireClient last(ws.socket);
  const auto refused = hello_answer(last);
  INFO(refused.dump());
  CHECK(refused.at("type") == "error");
  CHECK(refused.at("code") == "busy");
  CHECK(refused.at("message").get<std::string>().find("[daemon] max_connections") !=
        std::string::npos);
  // The client library reports it as the typed error too (a CLI user sees `busy: ...`).
  const auto cli = run_command(
      as_uid(kOther, {kProbe, "fetch", ws.socket.string(), kRelu, "1", kVariant}), kNoTrustEnv);
  INFO(cli.out << cli.err);
  CHECK(cli.exit_code == 1);
  CHECK(json::parse(cli.out, nullptr, false).value("code", "") == "busy");
  roots.clear();
  last.close();
  CHECK(daemon.child().running());
}

TEST_CASE(
    "a frame trickled one byte per second is cut off at the frame timeout, while silence between "
    "requests counts only against the idle timeout",
    "[daemon][limits]") {
  Workspace ws;
  auto config = ws.config();
  config.extra_args = {"--frame-timeout", "2", "--idle-timeout", "30"};
  DaemonProcess daemon(config);

  SECTION("a request trickled after hello") {
    WireClient client(ws.socket);
    REQUIRE(client.hello().at("type") == "hello");
    // Setup: 4 s of silence (twice the frame bound) is not a frame in progress: still served.
    std::this_thread::sleep_for(std::chrono::seconds(4));
    REQUIRE(client.status().at("type") == "status");

    const std::string payload = json{{"type", "status"}, {"id", 9}}.dump();
    std::string bytes{0, 0, 0, static_cast<char>(payload.size())};
    bytes += payload;
    const auto start = Clock::now();
    std::size_t sent = 0;
    json answer;
    while (sent < bytes.size() && ms_since(start) < 10'000) {
      client.send_raw(bytes.substr(sent, 1));
      ++sent;
      pollfd p{client.fd(), POLLIN, 0};
      if (::poll(&p, 1, 1000) > 0) {
        auto frame = client.read(std::chrono::seconds(1));
        if (frame) answer = frame->message;
        break;
      }
    }
    const double cut_ms = ms_since(start);
    INFO(answer.dump() << " after " << cut_ms << " ms, " << sent << " of " << bytes.size()
                       << " bytes sent");
    REQUIRE(sent < bytes.size());  // the frame never completed
    CHECK(answer.value("type", "") == "error");
    CHECK(answer.value("code", "") == "timeout");
    CHECK(answer.value("message", "").find("frame_timeout_s") != std::string::npos);
    CHECK(cut_ms >= 1900);
    CHECK(cut_ms < 3500);
    CHECK(client.hung_up(std::chrono::seconds(5)));
  }
  SECTION("hello trickled from connect") {
    WireClient client(ws.socket);
    const std::string payload = json{{"type", "hello"}, {"protocol", 1}}.dump();
    std::string bytes{0, 0, 0, static_cast<char>(payload.size())};
    bytes += payload;
    const auto start = Clock::now();
    std::size_t sent = 0;
    json answer;
    while (sent < bytes.size() && ms_since(start) < 10'000) {
      try {
        client.send_raw(bytes.substr(sent, 1));
      } catch (const std::exception&) {
        break;  // already closed
      }
      ++sent;
      pollfd p{client.fd(), POLLIN, 0};
      if (::poll(&p, 1, 1000) > 0) {
        auto frame = client.read(std::chrono::seconds(1));
        if (frame) answer = frame->message;
        break;
      }
    }
    INFO(answer.dump() << " after " << ms_since(start) << " ms");
    REQUIRE(sent < bytes.size());
    CHECK(answer.value("code", "") == "timeout");
    CHECK(ms_since(start) < 3500);
  }
  CHECK(daemon.child().running());
  WireClient other(ws.socket);
  CHECK(other.hello().at("type") == "hello");
  CHECK(other.fetch(kRelu, 1).message.at("type") == "fetched");
}

TEST_CASE("a connection waiting on its own download is not idle", "[daemon][limits]") {
  Workspace ws;
  auto config = ws.config();
  config.extra_args = {"--idle-timeout", "1"};
  DaemonProcess daemon(config);
  set_hub_faults(ws.hub, {{"stall_ms", 2500}, {"path_filter", ".so"}});
  ws.hub.reset_requests();

  WireClient client(ws.socket);
  REQUIRE(client.hello().at("type") == "hello");
  const auto start = Clock::now();
  const auto fetched = client.fetch(kRelu, 1);
  const double took = ms_since(start);
  INFO(fetched.message.dump());
  // Setup: the download really outlasted the idle timeout (the stall was served).
  REQUIRE(ws.hub.count("GET", ".so") >= 1);
  REQUIRE(took > 2000);
  CHECK(fetched.message.at("type") == "fetched");
  CHECK(check_handout(fetched).empty());
  // The same connection goes on: the idle clock restarts after each reply.
  CHECK(client.status().at("type") == "status");
}

TEST_CASE("the client library reconnects on its own after the daemon closed it for idling",
          "[daemon][limits]") {
  Workspace ws;
  auto config = ws.config();
  config.extra_args = {"--idle-timeout", "1"};
  DaemonProcess daemon(config);
  const auto r =
      run_command({kProbe, "idle-client", ws.socket.string(), "2000", kRelu, "1", kVariant},
                  kNoTrustEnv, std::chrono::seconds(30));
  INFO(r.out << r.err << daemon.log());
  REQUIRE(r.exit_code == 0);
  const auto out = json::parse(r.out);
  const auto first = out.at("first").at("counters");
  const auto second = out.at("second").at("counters");
  // The first connection was closed by the daemon (idle) and a second one made for status...
  CHECK(second.at("connections").get<int>() == first.at("connections").get<int>() + 1);
  CHECK(second.at("active_connections") == 1);
  // ... and the fetch after it worked on that one.
  CHECK(out.at("fetch").at("ok") == true);
}

TEST_CASE(
    "at most max_downloads distinct flights download at once, and the next waits its turn and "
    "completes",
    "[daemon][limits]") {
  Workspace ws;
  const std::vector<std::string> repos{kRelu, "kernels-community/flash-attn3",
                                       "kernels-community/broken-python-abi"};
  constexpr int kStallMs = 2000;
  set_hub_faults(ws.hub, {{"stall_ms", kStallMs}, {"path_filter", ".so"}});

  // Sends the three fetches at once on three connections; returns each one's final frame and
  // the time it arrived, and the .so GETs the Hub had seen 800 ms after the second began.
  struct Round {
    std::vector<json> replies;
    std::vector<double> done_ms;
    std::size_t so_gets_while_stalled = 0;
  };
  auto round = [&](const std::string& max_downloads, const std::string& name) {
    auto config = ws.config();
    config.cache = ws.dir.path() / ("cache-" + name);
    config.socket = ws.dir.path() / (name + ".sock");
    config.log = ws.dir.path() / (name + ".log");
    config.extra_args = {"--max-downloads", max_downloads};
    DaemonProcess daemon(config);
    ws.hub.reset_requests();
    std::vector<std::unique_ptr<WireClient>> clients;
    for (std::size_t i = 0; i < repos.size(); ++i) {
      clients.push_back(std::make_unique<WireClient>(config.socket));
      clients.back()->hello();
    }
    const auto start = Clock::now();
    for (std::size_t i = 0; i < repos.size(); ++i) clients[i]->send_fetch(repos[i], 1);
    Round r;
    // Once two transfers are stalled, give a third every chance to start: uncapped, until it
    // has (at most 1.5 s, still inside the first two's 2 s stall, so a load-slowed machine
    // does not fail the setup); capped, 800 ms in which it must not.
    (void)ws.hub.wait_for("GET", ".so", 2, std::chrono::seconds(5));
    (void)ws.hub.wait_for("GET", ".so", 3,
                          std::chrono::milliseconds(max_downloads == "3" ? 1500 : 800));
    r.so_gets_while_stalled = ws.hub.count("GET", ".so");
    for (auto& c : clients) {
      std::optional<kernelhub::proto::ReceivedFrame> frame;
      do {
        frame = c->read(std::chrono::seconds(30));
      } while (frame && frame->message.value("type", "") == "progress");
      r.replies.push_back(frame ? frame->message : json(nullptr));
      r.done_ms.push_back(ms_since(start));
    }
    INFO(daemon.log());
    return r;
  };

  // Setup: with room for all three, the three transfers do overlap.
  const auto free = round("3", "free");
  INFO("uncapped: " << json(free.replies).dump());
  REQUIRE(free.so_gets_while_stalled == 3);
  for (const auto& reply : free.replies) REQUIRE(reply.value("type", "") == "fetched");

  const auto capped = round("2", "capped");
  INFO("capped: " << json(capped.replies).dump());
  CHECK(capped.so_gets_while_stalled == 2);  // the third waited
  for (const auto& reply : capped.replies) CHECK(reply.value("type", "") == "fetched");
  CHECK(ws.hub.count("GET", ".so") == 3);  // and then ran
  // Two stalls one after the other for the last one.
  const double last = *std::max_element(capped.done_ms.begin(), capped.done_ms.end());
  CHECK(last >= 2 * kStallMs - 100);
}
