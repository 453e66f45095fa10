// The guarded listener (kernelhub/http/guarded_server.hpp) on its own, with small
// limits: every bound of a request head gets its status and a close, the caps per address and in
// all, the header deadline, slow clients never delaying others, keep-alive and pipelining, and what
// reaches httplib (malformed Range dropped, Expect answered, REMOTE_ADDR ours).
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>

#include <array>
#include <thread>
#include <vector>

#include "kernelhub/http/guarded_server.hpp"
#include "kernelhub/http/http_replies.hpp"
#include "support/raw_http.hpp"

using namespace kernelhub;
using namespace std::chrono_literals;
using namespace std::string_literals;
using http::GuardedServer;
using http::HttpListenerLimits;
using testing::RawHttp;
using Clock = std::chrono::steady_clock;

namespace {

// A GuardedServer with a few routes, served on a thread of its own.
struct Served {
  explicit Served(HttpListenerLimits limits, bool loopback_only = true) : server(limits) {
    server.Get("/hello", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("hi", "text/plain");
    });
    // What httplib made of the head: the Range it parsed, the peer it saw.
    server.Get("/seen", [](const httplib::Request& req, httplib::Response& res) {
      const auto ranges = http::take_ranges(req);  // as the file routes do
      res.set_content("ranges=" + std::to_string(ranges.size()) +
                          " range=" + req.get_header_value("Range") +
                          " remote=" + req.get_header_value("REMOTE_ADDR") +
                          " expect=" + req.get_header_value("Expect"),
                      "text/plain");
    });
    server.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content(req.body, "text/plain");
    });
    auto bound = server.bind("localhost", 0, loopback_only);
    if (!bound) throw std::runtime_error(bound.error().message);
    port = *bound;
    thread = std::thread([this] { (void)server.serve(); });
  }
  ~Served() {
    server.shutdown();
    thread.join();
  }
  GuardedServer server;
  int port = 0;
  std::thread thread;
};

HttpListenerLimits small_limits() {
  HttpListenerLimits l;
  l.head.max_request_line = 256;
  l.head.max_header_line = 128;
  l.head.max_header_lines = 8;
  l.head.max_head_bytes = 1024;
  l.head.max_body_bytes = 64;
  l.header_timeout = 800ms;
  l.max_connections = 6;
  l.max_connections_per_address = 3;
  l.workers = 2;
  return l;
}

const std::string kGet = "GET /hello HTTP/1.1\r\nHost: x\r\n";

// Sends `bytes`, expects the gate's `status` with its X-Error-Code, then a close.
void expect_refusal(int port, const std::string& bytes, int status, const std::string& code) {
  RawHttp c(port);
  c.send(bytes);
  const auto reply = c.read_reply(3s);
  INFO(bytes.substr(0, 80) << " -> " << reply.head);
  CHECK(reply.status == status);
  CHECK(reply.header("X-Error-Code") == code);
  CHECK(reply.header("Connection") == "close");
  CHECK(c.closed_within(3s));
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Waits (up to 2 s) until the gate has seen closes and accepts: `open` connections.
bool wait_open(const GuardedServer& server, std::uint64_t open) {
  for (int i = 0; i < 100; ++i) {
    if (server.stats().open == open) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

}  // namespace

TEST_CASE("the gate refuses every head over a bound, or malformed, and closes", "[server][gate]") {
  Served s(small_limits());
  expect_refusal(s.port, "GET /" + std::string(300, 'a') + " HTTP/1.1\r\n\r\n", 414, "URITooLong");
  // Unfinished lines are cut at the bound, not when they end.
  expect_refusal(s.port, "GET /" + std::string(300, 'a'), 414, "URITooLong");
  expect_refusal(s.port, kGet + "X-Big: " + std::string(200, 'b'), 431,
                 "RequestHeaderFieldsTooLarge");
  std::string many = kGet;
  for (int i = 0; i < 9; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  expect_refusal(s.port, many + "\r\n", 431, "RequestHeaderFieldsTooLarge");
  std::string large = kGet;
  for (int i = 0; i < 8; ++i)
    large += "X-" + std::to_string(i) + ": " + std::string(120, 'c') + "\r\n";
  expect_refusal(s.port, large, 431, "RequestHeaderFieldsTooLarge");
  expect_refusal(s.port, "POST /echo HTTP/1.1\r\nContent-Length: 65\r\n\r\n", 413,
                 "PayloadTooLarge");
  expect_refusal(s.port, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411,
                 "LengthRequired");
  expect_refusal(s.port, "POST /echo HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                 400, "BadRequest");
  expect_refusal(s.port, "GET /hello HTTP/1.1\nHost: x\n\n", 400, "BadRequest");
  expect_refusal(s.port, kGet + " folded\r\n\r\n", 400, "BadRequest");
  expect_refusal(s.port, kGet + "No-Colon\r\n\r\n", 400, "BadRequest");
  expect_refusal(s.port, kGet + "X: a\0b\r\n\r\n"s, 400, "BadRequest");
  expect_refusal(s.port, "GET /hello HTTP/2.0\r\n\r\n", 505, "HTTPVersionNotSupported");
  expect_refusal(s.port, kGet + "Expect: something\r\n\r\n", 417, "ExpectationFailed");
  // None of these reached a worker.
  CHECK(s.server.stats().requests == 0);
  CHECK(s.server.stats().heads_refused == 14);
  // And the server still answers.
  CHECK(testing::raw_get(s.port, "/hello", 2s).body == "hi");
}

TEST_CASE("the gate serves keep-alive and pipelined requests in order, bodies and 100-continue",
          "[server][gate]") {
  Served s(small_limits());
  RawHttp c(s.port);
  REQUIRE(c.send(kGet + "\r\n" + "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello" + kGet +
                 "\r\n"));
  CHECK(c.read_reply(2s).body == "hi");
  CHECK(c.read_reply(2s).body == "hello");
  CHECK(c.read_reply(2s).body == "hi");
  // Expect: 100-continue: the gate says 100 itself, then the body comes.
  REQUIRE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"));
  std::array<char, 25> buf{};
  REQUIRE(::recv(c.fd(), buf.data(), buf.size(), MSG_WAITALL) == 25);
  CHECK(std::string(buf.data(), buf.size()) == "HTTP/1.1 100 Continue\r\n\r\n");
  REQUIRE(c.send("abc"));
  CHECK(c.read_reply(2s).body == "abc");
  // The same connection still serves, then a close is honoured.
  REQUIRE(c.send(kGet + "Connection: close\r\n\r\n"));
  CHECK(c.read_reply(2s).body == "hi");
  CHECK(c.closed_within(2s));
  CHECK(s.server.stats().requests == 5);
}

TEST_CASE("httplib never sees a malformed Range, Expect, or a client's REMOTE_ADDR",
          "[server][gate]") {
  Served s(small_limits());
  auto seen = [&](const std::string& headers) {
    return testing::raw_get(s.port, "/seen", 2s, headers).body;
  };
  // httplib 0.11 would answer these 416 before routing; RFC 9110 says ignore them.
  for (const char* bad : {"bytes=abc", "bytes=5-2", "bytes=-", "items=0-1", "bytes=0-1,,",
                          "bytes=99999999999999999999-"}) {
    INFO(bad);
    CHECK(seen("Range: " + std::string(bad) + "\r\n").starts_with("ranges=0 range= "));
  }
  CHECK(seen("Range: bytes=0-1\r\nRange: bytes=2-3\r\n").starts_with("ranges=0 range= "));
  CHECK(seen("Range: bytes=0-9\r\n").starts_with("ranges=1 range=bytes=0-9 "));
  CHECK(seen("Range: bytes=-5, 7-\r\n").starts_with("ranges=2 "));
  CHECK(seen("REMOTE_ADDR: 6.6.6.6\r\n").find("remote=127.0.0.1 ") != std::string::npos);
}

TEST_CASE("connections are capped per client address and in all, with 503", "[server][gate]") {
  Served s(small_limits());  // 3 per address, 6 in all
  std::vector<std::unique_ptr<RawHttp>> held;
  held.reserve(6);
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawHttp>(s.port, "127.0.0.2"));
  {
    RawHttp over(s.port, "127.0.0.2");  // the gate answers at accept, before any request
    const auto reply = over.read_reply(2s);
    CHECK(reply.status == 503);
    CHECK(reply.header("Retry-After") == "1");
    CHECK(reply.body.find("127.0.0.2") != std::string::npos);
    CHECK(over.closed_within(2s));
  }
  // Another address is still served, on a held slot's neighbour.
  CHECK(testing::raw_get(s.port, "/hello", 2s).body == "hi");
  REQUIRE(wait_open(s.server, 3));
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawHttp>(s.port, "127.0.0.3"));
  REQUIRE(wait_open(s.server, 6));
  CHECK(testing::raw_get(s.port, "/hello", 2s).status == 503);  // 6 in all
  CHECK(s.server.stats().refused_busy == 2);
  // A slot given back is free again.
  held.front()->close();
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {
    served = testing::raw_get(s.port, "/hello", 2s).status == 200;
    if (!served) std::this_thread::sleep_for(20ms);
  }
  CHECK(served);
}

TEST_CASE("the header deadline closes drips, idle and half-sent connections", "[server][gate]") {
  Served s(small_limits());  // 800 ms
  RawHttp idle(s.port);
  RawHttp kept(s.port);
  REQUIRE(kept.send(kGet + "\r\n"));
  REQUIRE(kept.read_reply(2s).status == 200);
  RawHttp drip(s.port);
  const auto start = Clock::now();
  const std::string head = kGet + "X-Slow: ";
  std::size_t sent = 0;
  bool refused = false;
  while (ms_since(start) < 3000 && !refused) {
    if (!drip.send(head.substr(sent++ % head.size(), 1))) break;  // a byte every 50 ms
    pollfd p{drip.fd(), POLLIN, 0};
    refused = ::poll(&p, 1, 50) > 0;
  }
  const double took = ms_since(start);
  const auto reply = drip.read_reply(2s);
  CHECK(reply.status == 408);
  CHECK(took > 700);
  CHECK(took < 2000);
  CHECK(idle.closed_within(1s));  // nothing sent: closed without a word
  CHECK(kept.closed_within(1s));  // keep-alive waiting for a next request: the same
  CHECK(s.server.stats().heads_timed_out == 3);
}

TEST_CASE("slow clients never delay another: no worker waits on a head", "[server][gate]") {
  auto limits = small_limits();
  limits.max_connections = 64;
  limits.max_connections_per_address = 64;
  limits.header_timeout = 10s;
  Served s(limits);  // 2 workers
  std::vector<std::unique_ptr<RawHttp>> drips;
  for (int i = 0; i < 40; ++i) {
    drips.push_back(std::make_unique<RawHttp>(s.port));
    REQUIRE(drips.back()->send("GET /hello HTTP/1.1\r\n"));
  }
  double worst = 0;
  for (int i = 0; i < 20; ++i) {
    for (auto& d : drips) d->send("X");
    const auto start = Clock::now();
    CHECK(testing::raw_get(s.port, "/hello", 2s).body == "hi");
    worst = std::max(worst, ms_since(start));
  }
  INFO("slowest request: " << worst << " ms");
  CHECK(worst < 500);
}

TEST_CASE("loopback_only: localhost is 127.0.0.1, and a non-loopback bind is refused",
          "[server][gate]") {
  Served s(small_limits());
  CHECK(s.server.bound_ip() == "127.0.0.1");
  GuardedServer other;
  const auto refused = other.bind("0.0.0.0", 0, /*loopback_only=*/true);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::invalid_argument);
  CHECK(refused.error().message.find("not a loopback address") != std::string::npos);
  // A name other than localhost is never resolved when loopback only.
  CHECK_FALSE(other.bind("ip6-localhost", 0, true));
}

TEST_CASE("shutdown closes every connection and serve returns at once", "[server][gate]") {
  auto s = std::make_unique<Served>(small_limits());
  RawHttp idle(s->port);
  RawHttp partial(s->port);
  REQUIRE(partial.send("GET /hel"));
  const auto start = Clock::now();
  s.reset();
  CHECK(ms_since(start) < 500);
  CHECK(idle.closed_within(1s));
  CHECK(partial.closed_within(1s));
}
