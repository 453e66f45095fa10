// Hostile bytes on the socket: every malformed, oversized, truncated or unknown frame gets
// an error reply or a closed connection, never a crash, and other clients keep being served.
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <thread>

#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
using nlohmann::json;

namespace {

std::string header(std::uint32_t length) {
  return {static_cast<char>(length >> 24), static_cast<char>(length >> 16),
          static_cast<char>(length >> 8), static_cast<char>(length)};
}
std::string frame_of(const std::string& payload) {
  return header(static_cast<std::uint32_t>(payload.size())) + payload;
}

// The daemon answers with error `code`, then hangs up.
void expect_error_then_close(WireClient& client, const std::string& code) {
  auto frame = client.read(std::chrono::seconds(10));
  REQUIRE(frame);
  INFO(frame->message.dump());
  CHECK(frame->message.at("type") == "error");
  CHECK(frame->message.at("code") == code);
  bool closed = false;
  try {
    closed = !client.read(std::chrono::seconds(10)).has_value();
  } catch (const std::exception& e) {
    closed = std::string(e.what()).find("timeout") == std::string::npos;  // reset counts as closed
  }
  CHECK(closed);
}

void expect_served(const Workspace& ws) {
  WireClient other(ws.socket);
  CHECK(other.hello().at("type") == "hello");
  const auto fetched = other.fetch(kRelu, 1);
  CHECK(fetched.message.at("type") == "fetched");
  CHECK(check_handout(fetched).empty());
}

}  // namespace

TEST_CASE(
    "malformed, oversized, truncated and unknown frames get an error or a close and the daemon "
    "keeps serving",
    "[daemon][frames]") {
  Workspace ws;
  DaemonProcess daemon(ws.config());
  expect_served(ws);
  const auto pid = daemon_pid(ws.socket);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto fds_before = fd_count(pid);

  SECTION("a length over the cap is refused before its payload") {
    WireClient c(ws.socket);
    c.hello();
    c.send_raw(header(0x7fffffff) + "xx");
    expect_error_then_close(c, "frame_too_large");
  }
  SECTION("one byte over 1 MiB is refused, before hello too") {
    WireClient c(ws.socket);
    c.send_raw(header((1u << 20) + 1));
    expect_error_then_close(c, "frame_too_large");
  }
  SECTION("invalid JSON") {
    WireClient c(ws.socket);
    c.hello();
    c.send_raw(frame_of("{\"type\": \"status\", \"id\": "));
    expect_error_then_close(c, "malformed_frame");
  }
  SECTION("JSON that is not an object, or has no string type") {
    for (const std::string payload : {"[1,2,3]", "\"hello\"", "{\"id\":1}", "{\"type\":7}"}) {
      INFO(payload);
      WireClient c(ws.socket);
      c.hello();
      c.send_raw(frame_of(payload));
      expect_error_then_close(c, "malformed_frame");
    }
  }
  SECTION("a zero-length frame") {
    WireClient c(ws.socket);
    c.hello();
    c.send_raw(header(0));
    expect_error_then_close(c, "malformed_frame");
  }
  SECTION("binary garbage instead of hello") {
    WireClient c(ws.socket);
    c.send_raw(std::string("\x00\x00\x00\x04\xff\xfe\x00\x01", 8));
    expect_error_then_close(c, "malformed_frame");
  }
  SECTION("end of stream inside the header or inside the payload") {
    for (const std::string& bytes : {header(40).substr(0, 2), header(40) + "{\"type\":\"sta"}) {
      WireClient c(ws.socket);
      c.hello();
      c.send_raw(bytes);
      ::shutdown(c.fd(), SHUT_WR);
      expect_error_then_close(c, "truncated_frame");
    }
  }
  SECTION("a request before hello") {
    WireClient c(ws.socket);
    c.send({{"type", "status"}, {"id", 1}});
    expect_error_then_close(c, "protocol_error");
  }
  SECTION("unknown and invalid requests get an error and the connection stays usable") {
    WireClient c(ws.socket);
    c.hello();
    c.send({{"type", "frobnicate"}, {"id", 5}});
    auto reply = c.read();
    REQUIRE(reply);
    CHECK(reply->message.at("type") == "error");
    CHECK(reply->message.at("code") == "unknown_request");
    c.send({{"type", "fetch"}, {"id", 6}, {"repo", kRelu}, {"version", "one"}});
    reply = c.read();
    REQUIRE(reply);
    CHECK(reply->message.at("code") == "invalid_request");
    CHECK(reply->message.at("id") == 6);
    c.send({{"type", "fetch"}, {"id", 7}, {"repo", "../../etc"}, {"version", 1}});
    reply = c.read();
    REQUIRE(reply);
    CHECK(reply->message.at("type") == "error");
    CHECK(c.status().at("type") == "status");
  }
  SECTION("a flood of garbage from many clients at once") {
    std::vector<std::thread> threads;
    for (int i = 0; i < 16; ++i) {
      threads.emplace_back([&ws, i] {
        try {
          WireClient c(ws.socket);
          std::string junk(4096 + i, static_cast<char>(0x41 + i));
          c.send_raw(junk);
          ::shutdown(c.fd(), SHUT_WR);
          while (c.read(std::chrono::seconds(10))) {
          }
        } catch (const std::exception&) {
          // resets are fine; the daemon surviving is what matters
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(daemon.child().running());
  }

  CHECK(daemon.child().running());
  expect_served(ws);
  // Each bad connection was closed: the daemon holds no more descriptors than before.
  std::size_t fds_after = 0;
  for (int i = 0; i < 100; ++i) {
    fds_after = fd_count(pid);
    if (fds_after <= fds_before) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(fds_after == fds_before);
}
