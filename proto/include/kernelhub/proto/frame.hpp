// Framing of the kernelhubd wire protocol (docs/protocol.md "Frames"): a 4-byte big-endian
// length, then that many bytes of compact JSON holding exactly one object with a string
// `type`. Pure byte mechanics, no I/O: transport.hpp moves the bytes.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kernelhub/util/result.hpp"

namespace kernelhub::proto {

inline constexpr std::size_t kDefaultMaxFrame = std::size_t{1} << 20;
inline constexpr std::size_t kFrameHeaderSize = 4;

// Header + payload. frame_too_large when the payload exceeds max_frame; malformed_frame
// when `message` is not an object with a string `type` (we never send what we would refuse).
Result<std::string> encode_frame(const nlohmann::json& message,
                                 std::size_t max_frame = kDefaultMaxFrame);

// Incremental decoder: feed() whatever arrived, then call next() until it yields nullopt.
// After an error the stream is out of sync; the decoder stays failed and keeps returning it.
class FrameDecoder {
 public:
  explicit FrameDecoder(std::size_t max_frame = kDefaultMaxFrame);

  void feed(std::string_view bytes);
  // A whole frame's object; nullopt when more bytes are needed. frame_too_large as soon as
  // the 4 length bytes are in (the payload is never buffered); malformed_frame for a zero
  // length, invalid JSON, a non-object or a missing/non-string `type`.
  Result<std::optional<nlohmann::json>> next();
  // Bytes of an unfinished frame are buffered: end of stream now means truncated_frame.
  bool mid_frame() const;
  // Length announced by the buffered header, once its 4 bytes are in (readers size reads).
  std::optional<std::size_t> pending_length() const;
  // Bytes still missing from the current frame (the header first, then the payload), so a
  // reader can stop exactly at a frame boundary and attribute SCM_RIGHTS fds to one frame.
  std::size_t bytes_needed() const;
  std::size_t max_frame() const { return max_frame_; }

 private:
  std::size_t max_frame_;
  std::string buffer_;
  std::size_t consumed_ = 0;  // bytes of buffer_ already handed out as frames
  std::optional<Error> failed_;
};

}  // namespace kernelhub::proto
