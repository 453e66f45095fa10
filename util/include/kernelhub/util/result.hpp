// Errors as values: every layer below the CLI/daemon edge returns Result<T>.
// Debian 12 ships no tl::expected and GCC 12 has std::expected only in C++23 mode,
// so this is a deliberately small expected-like type with the same spelling.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace kernelhub {

enum class ErrorCode {
  invalid_argument,      // bad flag, bad repo id, bad version string
  untrusted_publisher,   // trust policy refused the org
  remote_code_disabled,  // DIFFUSERS_DISABLE_REMOTE_CODE is set
  repo_not_found,
  revision_not_found,
  version_not_found,
  entry_not_found,
  no_matching_variant,
  gated,
  unauthorized,
  rate_limited,
  http_status,         // any other non-success status
  network,             // connection refused/reset, DNS
  timeout,             // stall / deadline
  offline_not_cached,  // HF_HUB_OFFLINE or network failure with nothing cached
  malformed_response,  // JSON/headers we cannot accept
  too_large,           // response exceeds its size cap
  unsafe_path,         // hostile file name in a tree listing
  hash_mismatch,
  size_mismatch,
  disk_full,
  io,
  policy,              // admin policy file problems
  malformed_lockfile,  // kernels.lock that is neither format, or has a bad entry
  not_locked,          // a lockfile is in force and does not lock what was asked for
  signature_missing,   // [signatures] needs a Sigstore bundle and the variant has none
  signature_invalid,   // the bundle fails a check (named first in the message)
  // kernelhubd wire protocol (docs/protocol.md); these names travel as `code` strings.
  protocol_error,        // request before hello, second hello, ...
  unsupported_protocol,  // client protocol below the daemon's minimum
  malformed_frame,       // payload is not a JSON object with a string `type`
  truncated_frame,       // end of stream inside a frame
  frame_too_large,       // announced length above max_frame
  unknown_request,       // well-formed frame with an unknown `type`
  invalid_request,       // known `type`, members missing or of the wrong type
  permission_denied,     // peer uid/gid not allowed by the admin policy
  shutting_down,         // daemon is stopping and takes no new work
  busy,                  // a kernelhubd limit is reached (connections); the message names it
  // loader/: verify-then-dlopen of kernel shared objects.
  unsafe_kernel,        // writable by others, not a regular file, Python data symbols
  missing_dependency,   // a DT_NEEDED library that cannot be resolved
  incompatible_kernel,  // variant built for another torch / arch / device
  load_failed,          // dlopen itself failed
  op_not_found,         // no such operator in the kernel's namespace
  // python/: Python-only kernels in the embedded interpreter.
  python_error,  // the kernel's Python raised (the exception's type, message and frame follow)
  internal,
};

std::string_view to_string(ErrorCode code) noexcept;
// Inverse of to_string (error codes received over the wire); nullopt for unknown names.
std::optional<ErrorCode> error_code_from_string(std::string_view name) noexcept;

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;
};

struct Unexpected {
  Error error;
};

inline Unexpected fail(ErrorCode code, std::string message) {
  return Unexpected{Error{code, std::move(message)}};
}
inline Unexpected fail(Error error) { return Unexpected{std::move(error)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value)
      : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Unexpected u) : state_(std::in_place_index<1>, std::move(u.error)) {}  // NOLINT

  bool has_value() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(state_); }
  Error&& error() && { return std::get<1>(std::move(state_)); }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Unexpected u)
      : error_(std::move(u.error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  Error error_{};
  bool ok_ = true;
};

inline Result<void> ok() { return {}; }

}  // namespace kernelhub

// Propagate an error from an expression returning Result<...>.
#define KH_TRY(expr)                                                       \
  do {                                                                     \
    auto&& kh_try_result_ = (expr);                                        \
    if (!kh_try_result_) return ::kernelhub::fail(kh_try_result_.error()); \
  } while (false)

// Declares `decl` from the value of an expression returning Result<T>, or returns its error:
//   KH_TRY_ASSIGN(auto repo, trust::RepoId::parse(text));
// (`decl` must not hold a comma; spell a pair's type with an alias.)
#define KH_TRY_ASSIGN(decl, ...) \
  KH_TRY_ASSIGN_IMPL(KH_TRY_CONCAT(kh_try_value_, __LINE__), decl, __VA_ARGS__)
#define KH_TRY_ASSIGN_IMPL(tmp, decl, ...)                    \
  auto tmp = (__VA_ARGS__);                                   \
  if (!tmp) return ::kernelhub::fail(std::move(tmp).error()); \
  decl = std::move(tmp).value()
#define KH_TRY_CONCAT(a, b) KH_TRY_CONCAT_INNER(a, b)
#define KH_TRY_CONCAT_INNER(a, b) a##b
