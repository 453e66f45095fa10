#include "kernelhub/proto/frame.hpp"

#include <algorithm>
#include <cstdint>

#include "kernelhub/util/json_bounds.hpp"

namespace kernelhub::proto {
namespace {

Result<void> check_message(const nlohmann::json& message) {
  if (!message.is_object())
    return fail(ErrorCode::malformed_frame, "frame payload is not a JSON object");
  auto type = message.find("type");
  if (type == message.end() || !type->is_string())
    return fail(ErrorCode::malformed_frame, "frame has no string member 'type'");
  return ok();
}

std::size_t read_length(const char* p) {
  auto b = [p](int i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])); };
  return (b(0) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

}  // namespace

Result<std::string> encode_frame(const nlohmann::json& message, std::size_t max_frame) {
  KH_TRY(check_message(message));
  // `replace` keeps invalid UTF-8 in a string from throwing; peers only send what they parsed.
  std::string payload = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (payload.size() > max_frame || payload.size() > UINT32_MAX)
    return fail(ErrorCode::frame_too_large, "frame of " + std::to_string(payload.size()) +
                                                " bytes exceeds the limit of " +
                                                std::to_string(max_frame));
  const auto n = static_cast<std::uint32_t>(payload.size());
  std::string frame;
  frame.reserve(kFrameHeaderSize + payload.size());
  frame.push_back(static_cast<char>(n >> 24));
  frame.push_back(static_cast<char>(n >> 16));
  frame.push_back(static_cast<char>(n >> 8));
  frame.push_back(static_cast<char>(n));
  frame += payload;
  return frame;
}

FrameDecoder::FrameDecoder(std::size_t max_frame) : max_frame_(max_frame) {}

void FrameDecoder::feed(std::string_view bytes) {
  if (failed_) return;
  // Drop handed-out frames before growing, so the buffer stays about one frame long.
  if (consumed_ > 0 && (consumed_ == buffer_.size() || consumed_ >= 4096)) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes);
}

std::optional<std::size_t> FrameDecoder::pending_length() const {
  if (buffer_.size() - consumed_ < kFrameHeaderSize) return std::nullopt;
  return read_length(buffer_.data() + consumed_);
}

std::size_t FrameDecoder::bytes_needed() const {
  const std::size_t have = buffer_.size() - consumed_;
  auto length = pending_length();
  if (!length) return kFrameHeaderSize - have;
  const std::size_t want = kFrameHeaderSize + std::min(*length, max_frame_);
  return want > have ? want - have : 0;
}

bool FrameDecoder::mid_frame() const { return buffer_.size() > consumed_; }

Result<std::optional<nlohmann::json>> FrameDecoder::next() {
  if (failed_) return fail(*failed_);
  auto length = pending_length();
  if (!length) return std::optional<nlohmann::json>{};
  auto refuse = [this](ErrorCode code, std::string message) -> Unexpected {
    failed_ = Error{code, std::move(message)};
    buffer_.clear();
    consumed_ = 0;
    return fail(*failed_);
  };
  if (*length > max_frame_)
    return refuse(ErrorCode::frame_too_large, "frame length " + std::to_string(*length) +
                                                  " exceeds the limit of " +
                                                  std::to_string(max_frame_));
  if (*length == 0) return refuse(ErrorCode::malformed_frame, "frame of length 0");
  if (buffer_.size() - consumed_ - kFrameHeaderSize < *length)
    return std::optional<nlohmann::json>{};

  const char* begin = buffer_.data() + consumed_ + kFrameHeaderSize;
  // Depth and value-count bounds as for every outside JSON
  // (kernelhub/util/json_bounds.hpp).
  util::JsonBounds bounds = util::kFrameJson;
  bounds.max_bytes = max_frame_;
  auto parsed = util::parse_bounded_json(std::string_view(begin, *length), bounds,
                                         ErrorCode::malformed_frame);
  consumed_ += kFrameHeaderSize + *length;
  if (!parsed) {
    return refuse(ErrorCode::malformed_frame, parsed.error().message == "not valid JSON"
                                                  ? "frame payload is not valid JSON"
                                                  : "frame payload: " + parsed.error().message);
  }
  auto message = std::move(*parsed);
  if (auto checked = check_message(message); !checked)
    return refuse(checked.error().code, checked.error().message);
  return std::optional<nlohmann::json>{std::move(message)};
}

}  // namespace kernelhub::proto
