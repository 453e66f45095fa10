// FrameDecoder: whole frames, frames split anywhere, every truncated prefix of a recorded
// exchange, oversized lengths refused on the header alone, malformed payloads.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernelhub/proto/frame.hpp"
#include "kernelhub/proto/messages.hpp"
#include "proto/proto_test_support.hpp"

using namespace kernelhub;
using namespace kernelhub::proto;
using namespace kernelhub::proto::testing;
using nlohmann::json;
using namespace std::string_literals;

namespace {

std::string header(std::uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

std::string raw_frame(const std::string& payload) {
  return header(static_cast<std::uint32_t>(payload.size())) + payload;
}

}  // namespace

TEST_CASE("encode_frame writes a big-endian length and compact JSON", "[proto][frame]") {
  auto frame = encode_frame(json{{"type", "status"}, {"id", 2}});
  REQUIRE(frame);
  const std::string payload = R"({"id":2,"type":"status"})";
  CHECK(*frame == raw_frame(payload));
  CHECK(frame->substr(0, 4) == std::string("\0\0\0\x18", 4));
}

TEST_CASE("encode_frame refuses what a peer would refuse", "[proto][frame]") {
  CHECK(encode_frame(json::array()).error().code == ErrorCode::malformed_frame);
  CHECK(encode_frame(json{{"id", 1}}).error().code == ErrorCode::malformed_frame);
  json big{{"type", "ls"}, {"pad", std::string(100, 'x')}};
  CHECK(encode_frame(big, 64).error().code == ErrorCode::frame_too_large);
  CHECK(encode_frame(big, 200));
}

TEST_CASE("every truncated prefix of a recorded exchange decodes cleanly",
          "[proto][frame][truncation]") {
  const auto frames = recorded_exchange();
  const auto rec = record(frames);
  for (std::size_t prefix = 0; prefix <= rec.bytes.size(); ++prefix) {
    // Fed in one piece, then byte by byte: the same frames either way.
    for (std::size_t step : {rec.bytes.size() + 1, std::size_t{1}, std::size_t{7}}) {
      FrameDecoder decoder;
      std::vector<json> got;
      for (std::size_t at = 0; at < prefix; at += step) {
        decoder.feed(std::string_view(rec.bytes).substr(at, std::min(step, prefix - at)));
        for (;;) {
          auto next = decoder.next();
          REQUIRE(next);
          if (!*next) break;
          got.push_back(std::move(**next));
        }
      }
      const std::size_t whole = complete_frames(rec, prefix);
      INFO("prefix " << prefix << " step " << step);
      REQUIRE(got.size() == whole);
      for (std::size_t i = 0; i < whole; ++i) CHECK(got[i] == frames[i]);
      const bool at_boundary = prefix == 0 || (whole > 0 && rec.frame_ends[whole - 1] == prefix);
      CHECK(decoder.mid_frame() == !at_boundary);  // EOF here: clean close or truncated_frame
    }
  }
}

TEST_CASE("an oversized length is frame_too_large from the header alone",
          "[proto][frame][limits]") {
  FrameDecoder decoder(1024);
  decoder.feed(header(1025).substr(0, 3));
  auto waiting = decoder.next();
  REQUIRE(waiting);
  CHECK_FALSE(waiting->has_value());
  CHECK(decoder.bytes_needed() == 1);
  decoder.feed(header(1025).substr(3));
  auto refused = decoder.next();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::frame_too_large);
  // The decoder stays failed: the stream is out of sync.
  decoder.feed(raw_frame(R"({"type":"status","id":1})"));
  CHECK(decoder.next().error().code == ErrorCode::frame_too_large);

  FrameDecoder huge;
  huge.feed(header(0xffffffffu));
  CHECK(huge.next().error().code == ErrorCode::frame_too_large);

  FrameDecoder exact(24);
  exact.feed(raw_frame(R"({"id":2,"type":"status"})"));
  auto fits = exact.next();
  REQUIRE(fits);
  CHECK(fits->has_value());
}

TEST_CASE("malformed payloads are malformed_frame", "[proto][frame][malformed]") {
  const std::vector<std::string> payloads = {
      "{", "not json", "[1,2,3]", "\"hello\"", "42", "null", "{}", R"({"type":1})",
      R"({"type":null})", R"({"type":"status"} {"type":"ls"})",
      // 13 bytes, a NUL inside the string (the s suffix keeps it)
      "{\"type\":\"a\0\"}"s, "{\"type\":\"\xff\xfe\"}"};
  for (const auto& payload : payloads) {
    INFO(json(payload).dump(-1, ' ', false, json::error_handler_t::replace));
    FrameDecoder decoder;
    decoder.feed(raw_frame(payload));
    auto next = decoder.next();
    REQUIRE_FALSE(next);
    CHECK(next.error().code == ErrorCode::malformed_frame);
  }
  FrameDecoder empty;
  empty.feed(header(0));
  CHECK(empty.next().error().code == ErrorCode::malformed_frame);
}

TEST_CASE("payloads nested deeper than 64 levels are malformed_frame",
          "[proto][frame][malformed]") {
  const auto nested = [](int depth) {
    return R"({"type":"status","x":)" + std::string(depth, '[') + std::string(depth, ']') + "}";
  };
  FrameDecoder ok_decoder;
  ok_decoder.feed(raw_frame(nested(63)));  // 63 arrays inside the object: 64 levels
  auto ok = ok_decoder.next();
  REQUIRE(ok);
  CHECK(ok->has_value());
  FrameDecoder deep_decoder;
  deep_decoder.feed(raw_frame(nested(100'000)));
  auto deep = deep_decoder.next();
  REQUIRE_FALSE(deep);
  CHECK(deep.error().code == ErrorCode::malformed_frame);
  CHECK(deep.error().message == "frame payload: nested deeper than 64 levels");
}

TEST_CASE("bytes_needed stops at each frame boundary", "[proto][frame]") {
  const auto rec = record(recorded_exchange());
  FrameDecoder decoder;
  std::size_t at = 0;
  std::size_t frames = 0;
  while (at < rec.bytes.size()) {
    const std::size_t n = decoder.bytes_needed();
    REQUIRE(n > 0);
    decoder.feed(std::string_view(rec.bytes).substr(at, n));
    at += n;
    auto next = decoder.next();
    REQUIRE(next);
    if (next->has_value()) {
      CHECK(at == rec.frame_ends[frames]);
      ++frames;
    }
  }
  CHECK(frames == rec.frame_ends.size());
}
