#include "kernelhub/util/error_table.hpp"

#include <array>
#include <cstddef>

namespace kernelhub {
namespace {

using enum ErrorCode;
using enum ErrorKind;
using enum Remedy;

constexpr ErrorInfo row(ErrorCode code, std::string_view name, ErrorKind kind, int exit_code,
                        int http_status, std::string_view hub_code, bool cache_fallback,
                        Remedy remedy) {
  return {code, name, kind, exit_code, http_status, hub_code, cache_fallback, remedy};
}

// One row per ErrorCode, in the enum's order (checked below). The exit code follows the kind
// (usage 2, refusal 3, not_found 4, upstream 6, integrity 7, local and bug 1) except for the
// two codes a script may want to tell apart: no_matching_variant (5) and disk_full (8).
// docs/errors.md gives the reasons; tests/util/error_table_test.cpp checks the rule.
// clang-format off: one row per line, columns aligned
//  code                   wire name               kind      exit http hub code fallback remedy
constexpr std::array kErrors{
    row(invalid_argument, "invalid_argument", usage, 2, 400, "BadRequest", false, none),
    row(untrusted_publisher, "untrusted_publisher", refusal, 3, 403, "Forbidden", false,
        trust_opt_in),
    row(remote_code_disabled, "remote_code_disabled", refusal, 3, 403, "Forbidden", false,
        allow_remote_code),
    row(repo_not_found, "repo_not_found", not_found, 4, 404, "RepoNotFound", true, none),
    row(revision_not_found, "revision_not_found", not_found, 4, 404, "RevisionNotFound", false,
        none),
    row(version_not_found, "version_not_found", not_found, 4, 404, "RevisionNotFound", false, none),
    row(entry_not_found, "entry_not_found", not_found, 4, 404, "EntryNotFound", false, none),
    row(no_matching_variant, "no_matching_variant", not_found, 5, 404, "EntryNotFound", false,
        other_build),
    row(gated, "gated", not_found, 4, 401, "Unauthorized", true, none),
    row(unauthorized, "unauthorized", not_found, 4, 401, "Unauthorized", true, none),
    row(rate_limited, "rate_limited", upstream, 6, 429, "TooManyRequests", true, none),
    row(http_status, "http_status", upstream, 6, 502, "BadGateway", true, none),
    row(network, "network", upstream, 6, 502, "BadGateway", true, prefetch_online),
    row(timeout, "timeout", upstream, 6, 504, "GatewayTimeout", true, prefetch_online),
    row(offline_not_cached, "offline_not_cached", upstream, 6, 502, "BadGateway", false,
        prefetch_online),
    row(malformed_response, "malformed_response", integrity, 7, 502, "BadGateway", false, none),
    row(too_large, "too_large", integrity, 7, 502, "BadGateway", false, none),
    row(unsafe_path, "unsafe_path", integrity, 7, 502, "BadGateway", false, none),
    row(hash_mismatch, "hash_mismatch", integrity, 7, 502, "BadGateway", false, none),
    row(size_mismatch, "size_mismatch", integrity, 7, 502, "BadGateway", false, none),
    row(disk_full, "disk_full", local, 8, 507, "InsufficientStorage", false, none),
    row(io, "io", local, 1, 500, "InternalError", false, none),
    row(policy, "policy", usage, 2, 500, "InternalError", false, none),
    row(malformed_lockfile, "malformed_lockfile", usage, 2, 400, "BadRequest", false, none),
    row(not_locked, "not_locked", refusal, 3, 403, "Forbidden", false, none),
    row(signature_missing, "signature_missing", refusal, 3, 403, "Forbidden", false,
        signed_release),
    row(signature_invalid, "signature_invalid", refusal, 3, 403, "Forbidden", false,
        signed_release),
    row(protocol_error, "protocol_error", bug, 1, 400, "BadRequest", false, none),
    row(unsupported_protocol, "unsupported_protocol", bug, 1, 400, "BadRequest", false, none),
    row(malformed_frame, "malformed_frame", bug, 1, 400, "BadRequest", false, none),
    row(truncated_frame, "truncated_frame", bug, 1, 400, "BadRequest", false, none),
    row(frame_too_large, "frame_too_large", bug, 1, 400, "BadRequest", false, none),
    row(unknown_request, "unknown_request", bug, 1, 400, "BadRequest", false, none),
    row(invalid_request, "invalid_request", bug, 1, 400, "BadRequest", false, none),
    row(permission_denied, "permission_denied", refusal, 3, 403, "Forbidden", false, none),
    row(shutting_down, "shutting_down", upstream, 6, 503, "ServiceUnavailable", false, none),
    row(busy, "busy", upstream, 6, 503, "ServiceUnavailable", false, none),
    row(unsafe_kernel, "unsafe_kernel", refusal, 3, 403, "Forbidden", false, none),
    row(missing_dependency, "missing_dependency", local, 1, 500, "InternalError", false, none),
    row(incompatible_kernel, "incompatible_kernel", local, 1, 500, "InternalError", false,
        other_build),
    row(load_failed, "load_failed", local, 1, 500, "InternalError", false, none),
    row(op_not_found, "op_not_found", local, 1, 500, "InternalError", false, none),
    row(python_error, "python_error", local, 1, 500, "InternalError", false, none),
    row(internal, "internal", bug, 1, 500, "InternalError", false, none),
};
// clang-format on

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kErrors.size(); ++i) {
    if (static_cast<std::size_t>(kErrors[i].code) != i) return false;
  }
  return true;
}
static_assert(kErrors.size() == static_cast<std::size_t>(ErrorCode::internal) + 1,
              "every ErrorCode has a row (internal is the enum's last value)");
static_assert(rows_in_enum_order(), "rows are in the enum's order");

}  // namespace

const ErrorInfo& error_info(ErrorCode code) noexcept {
  const auto index = static_cast<std::size_t>(code);
  return index < kErrors.size() ? kErrors[index] : kErrors.back();
}

std::string_view to_string(ErrorCode code) noexcept { return error_info(code).name; }

std::optional<ErrorCode> error_code_from_string(std::string_view name) noexcept {
  for (const auto& row : kErrors) {
    if (row.name == name) return row.code;
  }
  return std::nullopt;
}

std::string_view to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::usage:
      return "usage";
    case ErrorKind::refusal:
      return "refusal";
    case ErrorKind::integrity:
      return "integrity";
    case ErrorKind::not_found:
      return "not_found";
    case ErrorKind::upstream:
      return "upstream";
    case ErrorKind::local:
      return "local";
    case ErrorKind::bug:
      return "bug";
  }
  return "bug";
}

}  // namespace kernelhub
