#include "trust/result.hpp"

namespace kernelhub {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::untrusted_publisher: return "untrusted_publisher";
    case ErrorCode::remote_code_disabled: return "remote_code_disabled";
    case ErrorCode::repo_not_found: return "repo_not_found";
    case ErrorCode::revision_not_found: return "revision_not_found";
    case ErrorCode::version_not_found: return "version_not_found";
    case ErrorCode::entry_not_found: return "entry_not_found";
    case ErrorCode::no_matching_variant: return "no_matching_variant";
    case ErrorCode::gated: return "gated";
    case ErrorCode::unauthorized: return "unauthorized";
    case ErrorCode::rate_limited: return "rate_limited";
    case ErrorCode::http_status: return "http_status";
    case ErrorCode::network: return "network";
    case ErrorCode::timeout: return "timeout";
    case ErrorCode::offline_not_cached: return "offline_not_cached";
    case ErrorCode::malformed_response: return "malformed_response";
    case ErrorCode::too_large: return "too_large";
    case ErrorCode::unsafe_path: return "unsafe_path";
    case ErrorCode::hash_mismatch: return "hash_mismatch";
    case ErrorCode::size_mismatch: return "size_mismatch";
    case ErrorCode::disk_full: return "disk_full";
    case ErrorCode::io: return "io";
    case ErrorCode::policy: return "policy";
    case ErrorCode::internal: return "internal";
  }
  return "internal";
}

}  // namespace kernelhub
