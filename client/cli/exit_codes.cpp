#include "client/cli/exit_codes.hpp"

#include <iostream>
#include <string>

#include "trust/printable.hpp"

namespace kernelhub::cli {

int exit_code_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
    case ErrorCode::policy:
    case ErrorCode::malformed_lockfile:
    case ErrorCode::not_locked:
      return 2;
    case ErrorCode::untrusted_publisher:
    case ErrorCode::remote_code_disabled:
    case ErrorCode::signature_missing:
    case ErrorCode::signature_invalid:
      return 3;
    case ErrorCode::repo_not_found:
    case ErrorCode::revision_not_found:
    case ErrorCode::version_not_found:
    case ErrorCode::entry_not_found:
    case ErrorCode::gated:
    case ErrorCode::unauthorized:
      return 4;
    case ErrorCode::no_matching_variant:
      return 5;
    case ErrorCode::network:
    case ErrorCode::timeout:
    case ErrorCode::offline_not_cached:
    case ErrorCode::rate_limited:
    case ErrorCode::http_status:
    case ErrorCode::shutting_down:
      return 6;
    case ErrorCode::hash_mismatch:
    case ErrorCode::size_mismatch:
    case ErrorCode::too_large:
    case ErrorCode::malformed_response:
    case ErrorCode::unsafe_path:
      return 7;
    case ErrorCode::disk_full:
      return 8;
    default:
      return 1;
  }
}

int report(const Error& error) {
  // The message may quote a lockfile, a Hub or the daemon: escaped, it stays one line that
  // cannot drive the terminal.
  std::cerr << "kernelhub: " << to_string(error.code) << ": " << trust::printable(error.message)
            << "\n";
  return exit_code_for(error.code);
}

}  // namespace kernelhub::cli
