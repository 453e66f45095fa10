// What each error code means, in one table: its wire name, its kind, the CLI's exit code, the
// HTTP status and Hub error code (X-Error-Code) a Hub-API server answers with, and whether
// huggingface_hub would serve the cache for it. Every place that turns a code into a decision
// or a number looks it up here; docs/errors.md prints the table and says why each row is so.
#pragma once

#include <string_view>

#include "kernelhub/util/result.hpp"

namespace kernelhub {

enum class ErrorKind {
  usage,      // the request or a local file the user gave is wrong: fix it and run again
  refusal,    // a trust, signature, lock or access rule refused it: change the policy, not retry
  integrity,  // bytes that do not verify (the Hub's, a bundle's, a file's): never used
  not_found,  // the Hub has no such repo, revision, file or variant for us
  upstream,   // the Hub or kernelhubd cannot answer now: retry later
  local,      // this host failed (disk, loading a kernel)
  bug,        // a peer broke the protocol, or kernelhub did
};

// What the user can do about it, for the messages that say so (the dispatcher's, today).
enum class Remedy {
  none,
  trust_opt_in,       // set DIFFUSERS_TRUST_REMOTE_KERNELS for a publisher not trusted
  allow_remote_code,  // unset DIFFUSERS_DISABLE_REMOTE_CODE, or use a local build
  prefetch_online,    // download it while the Hub can be reached
  signed_release,     // use a release the [signatures] policy accepts
  other_build,        // no build fits this process: another backend or libtorch
};

struct ErrorInfo {
  ErrorCode code;
  std::string_view name;  // to_string(code): the wire name, the CLI's "kernelhub: <name>: ..."
  ErrorKind kind;
  int exit_code;              // the CLI's exit status
  int http_status;            // what a Hub-API server (kernelhubd --http, kernelhub serve) answers
  std::string_view hub_code;  // its X-Error-Code, as the Hub spells its own
  bool cache_fallback;        // a fetch serves a complete cached snapshot instead (as
                              // huggingface_hub's snapshot_download does for HTTP errors)
  Remedy remedy = Remedy::none;
};

const ErrorInfo& error_info(ErrorCode code) noexcept;
std::string_view to_string(ErrorKind kind) noexcept;

inline ErrorKind kind_of(ErrorCode code) noexcept { return error_info(code).kind; }
// Refused by a rule or by verification: the dispatcher raises KernelRefused (never a silent
// fall-back to another backend) and kernelhubd logs it as a warning.
inline bool is_refused(ErrorCode code) noexcept {
  const ErrorKind kind = kind_of(code);
  return kind == ErrorKind::refusal || kind == ErrorKind::integrity;
}

}  // namespace kernelhub
