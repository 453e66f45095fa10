// libFuzzer harness: arbitrary bytes through FrameDecoder and parse_message. Beyond "no
// crash", it checks that any message that parses serialises to JSON that parses back to the
// same message, and that every decoded frame re-encodes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kernelhub/proto/frame.hpp"
#include "kernelhub/proto/messages.hpp"

using namespace kernelhub::proto;

namespace {

void check_round_trip(const nlohmann::json& frame, Sender sender) {
  auto parsed = parse_message(frame, sender);
  if (!parsed) return;
  auto again = parse_message(to_json(*parsed), sender);
  if (!again || !(*again == *parsed)) __builtin_trap();
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): the names libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte picks the chunk size, so frames split at every offset get explored.
  const std::size_t chunk = 1 + data[0] % 64;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  FrameDecoder decoder(std::size_t{64} * 1024);
  while (!bytes.empty()) {
    decoder.feed(bytes.substr(0, chunk));
    bytes.remove_prefix(std::min(chunk, bytes.size()));
    for (;;) {
      auto next = decoder.next();
      if (!next || !*next) break;
      const auto& frame = **next;
      if (!encode_frame(frame, 1 << 20)) __builtin_trap();
      (void)parse_message(frame);
      check_round_trip(frame, Sender::client);
      check_round_trip(frame, Sender::daemon);
    }
  }
  (void)decoder.mid_frame();
  return 0;
}
