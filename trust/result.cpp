#include "trust/result.hpp"

namespace kernelhub {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument:
      return "invalid_argument";
    case ErrorCode::untrusted_publisher:
      return "untrusted_publisher";
    case ErrorCode::remote_code_disabled:
      return "remote_code_disabled";
    case ErrorCode::repo_not_found:
      return "repo_not_found";
    case ErrorCode::revision_not_found:
      return "revision_not_found";
    case ErrorCode::version_not_found:
      return "version_not_found";
    case ErrorCode::entry_not_found:
      return "entry_not_found";
    case ErrorCode::no_matching_variant:
      return "no_matching_variant";
    case ErrorCode::gated:
      return "gated";
    case ErrorCode::unauthorized:
      return "unauthorized";
    case ErrorCode::rate_limited:
      return "rate_limited";
    case ErrorCode::http_status:
      return "http_status";
    case ErrorCode::network:
      return "network";
    case ErrorCode::timeout:
      return "timeout";
    case ErrorCode::offline_not_cached:
      return "offline_not_cached";
    case ErrorCode::malformed_response:
      return "malformed_response";
    case ErrorCode::too_large:
      return "too_large";
    case ErrorCode::unsafe_path:
      return "unsafe_path";
    case ErrorCode::hash_mismatch:
      return "hash_mismatch";
    case ErrorCode::size_mismatch:
      return "size_mismatch";
    case ErrorCode::disk_full:
      return "disk_full";
    case ErrorCode::io:
      return "io";
    case ErrorCode::policy:
      return "policy";
    case ErrorCode::malformed_lockfile:
      return "malformed_lockfile";
    case ErrorCode::not_locked:
      return "not_locked";
    case ErrorCode::signature_missing:
      return "signature_missing";
    case ErrorCode::signature_invalid:
      return "signature_invalid";
    case ErrorCode::protocol_error:
      return "protocol_error";
    case ErrorCode::unsupported_protocol:
      return "unsupported_protocol";
    case ErrorCode::malformed_frame:
      return "malformed_frame";
    case ErrorCode::truncated_frame:
      return "truncated_frame";
    case ErrorCode::frame_too_large:
      return "frame_too_large";
    case ErrorCode::unknown_request:
      return "unknown_request";
    case ErrorCode::invalid_request:
      return "invalid_request";
    case ErrorCode::permission_denied:
      return "permission_denied";
    case ErrorCode::shutting_down:
      return "shutting_down";
    case ErrorCode::busy:
      return "busy";
    case ErrorCode::unsafe_kernel:
      return "unsafe_kernel";
    case ErrorCode::missing_dependency:
      return "missing_dependency";
    case ErrorCode::incompatible_kernel:
      return "incompatible_kernel";
    case ErrorCode::load_failed:
      return "load_failed";
    case ErrorCode::op_not_found:
      return "op_not_found";
    case ErrorCode::internal:
      return "internal";
  }
  return "internal";
}

std::optional<ErrorCode> error_code_from_string(std::string_view name) noexcept {
  // `internal` is last in the enum; walk every value through to_string.
  for (int i = 0; i <= static_cast<int>(ErrorCode::internal); ++i) {
    auto code = static_cast<ErrorCode>(i);
    if (to_string(code) == name) return code;
  }
  return std::nullopt;
}

}  // namespace kernelhub
