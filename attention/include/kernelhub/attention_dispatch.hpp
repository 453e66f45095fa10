// kernelhub attention dispatcher without the module layer: dispatch_attention, the backend
// guard, the backend list and the error types. <kernelhub/attention.hpp> adds the
// torch::nn Attention module on top; code that only dispatches includes this lighter header
// (torch/nn pulls in all of ATen).
//
//   #include <kernelhub/attention_dispatch.hpp>
//   namespace ka = kernelhub::attention;
//   ka::BackendGuard guard("flash_hub");            // fetches + verifies + loads the kernel
//   at::Tensor out = ka::dispatch_attention(q, k, v); // (batch, seq, heads, head_dim)
//
// Configuration comes from the environment: DIFFUSERS_ATTN_BACKEND (initial backend, default
// "native"), DIFFUSERS_ATTN_CHECKS (1/ON/YES/TRUE: per-call input checks), the trust
// variables DIFFUSERS_TRUST_REMOTE_KERNELS / DIFFUSERS_DISABLE_REMOTE_CODE, HF_ENDPOINT,
// KERNELHUB_SOCKET and the cache variables (how hub kernels are fetched), LOCAL_KERNELS
// (repo_or_library=path:... for local kernel builds), KERNELHUB_LOCKFILE (a kernels.lock
// that pins every hub kernel; see set_kernel_lockfile).
//
// Every error is an exception derived from std::runtime_error whose message says what is
// wrong and how to fix it.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

namespace kernelhub::attention {

struct AttentionOptions {
  std::optional<at::Tensor> attn_mask;  // bool (true = attend) or additive float
  double dropout_p = 0.0;
  bool is_causal = false;
  std::optional<double> scale;  // default 1/sqrt(head_dim)
  bool enable_gqa = false;
  std::optional<std::string> backend;  // overrides the active backend for this call
};

// query (B, Sq, H, D), key/value (B, Skv, Hkv, D) -> (B, Sq, H, D).
at::Tensor dispatch_attention(const at::Tensor& query, const at::Tensor& key,
                              const at::Tensor& value, const AttentionOptions& options = {});

// dispatch_attention with Diffusers' return_lse=True: the output and, for each query row, the
// log-sum-exp of its scaled and masked scores, lse (B, H, Sq) in float32 on the query's device
// (Diffusers' layout; what merging partial attention needs: context parallelism, attention
// sinks). A C++ function cannot change its return type with a flag, so this is its own entry
// point. A backend that cannot produce the lse throws UnsupportedArgument naming those that can.
struct AttentionWithLse {
  at::Tensor out;  // (B, Sq, H, D)
  at::Tensor lse;  // (B, H, Sq), float32
};
AttentionWithLse dispatch_attention_with_lse(const at::Tensor& query, const at::Tensor& key,
                                             const at::Tensor& value,
                                             const AttentionOptions& options = {});

// Base of every dispatcher error.
class AttentionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The name is not one of list_backends().
class UnknownBackend : public AttentionError {
 public:
  using AttentionError::AttentionError;
};
// The backend cannot run in this process: missing device, runtime, kernel, version.
class BackendUnavailable : public AttentionError {
 public:
  using AttentionError::AttentionError;
};
// Trust policy or verification refused the backend's kernel.
class KernelRefused : public BackendUnavailable {
 public:
  using BackendUnavailable::BackendUnavailable;
};
// An argument the backend cannot honour (a mask on flash_hub): never silently dropped.
class UnsupportedArgument : public AttentionError {
 public:
  using AttentionError::AttentionError;
};
// A per-call input check failed (DIFFUSERS_ATTN_CHECKS, or invalid shapes).
class InvalidInput : public AttentionError {
 public:
  using AttentionError::AttentionError;
};

// Sets the process-wide backend for a scope (activating it first: requirement checks,
// kernel fetch and load) and restores the previous one on destruction, exceptions
// included. Guards nest.
class BackendGuard {
 public:
  explicit BackendGuard(std::string_view backend);
  ~BackendGuard();
  BackendGuard(const BackendGuard&) = delete;
  BackendGuard& operator=(const BackendGuard&) = delete;

 private:
  std::string previous_active_;
  std::string previous_scoped_;
};

// The backend dispatch_attention uses when options.backend is unset.
std::string active_backend();
// Every backend name, in the Diffusers AttentionBackendName order.
std::vector<std::string> list_backends();

// DIFFUSERS_ATTN_CHECKS at start-up; can be switched at run time.
bool checks_enabled();
void set_checks_enabled(bool enabled);

// Pins every hub backend to the commits of this kernels.lock (either format, as written by
// `kernelhub lock` or `kernels lock`), in place of KERNELHUB_LOCKFILE; "" turns pinning off.
// A hub backend whose repo the lock does not name (or names at another version) is refused
// with KernelRefused. Applies to kernels loaded from now on: a loaded kernel stays loaded.
void set_kernel_lockfile(const std::string& path);

}  // namespace kernelhub::attention
