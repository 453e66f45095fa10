// The dispatcher's backend table (internal). Each family registers its backends from one
// function: native_backends.cpp (native, _native_*, flex), hub_backends.cpp (the compiled
// *_hub), library_backends.cpp (flash, flash_varlen, _flash_3, _flash_varlen_3, sage, the
// compiled _sage_qk_*, xformers: locally installed kernel builds), python_backends.cpp
// (flash_4_hub, sage_blackwell_hub, sage_varlen, _sage_qk_int8_pv_fp16_triton: Python kernels in
// the embedded interpreter). The registry calls them once, explicitly, because self-registering
// statics are dropped when a static library is linked. A backend that cannot run here still
// registers; its `activate` says precisely why.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "kernelhub/attention_dispatch.hpp"

namespace kernelhub::attention::detail {

struct AttentionInputs {
  const at::Tensor& query;  // (B, Sq, H, D)
  const at::Tensor& key;    // (B, Skv, Hkv, D)
  const at::Tensor& value;
  const AttentionOptions& options;
};

// The softmax scale of a call: options.scale, else 1/sqrt(head_dim).
inline double softmax_scale(const AttentionInputs& inputs) {
  if (inputs.options.scale) return *inputs.options.scale;
  return 1.0 / std::sqrt(static_cast<double>(inputs.query.size(-1)));
}

// A Diffusers constraint (_check_device, _check_shape, ...): throws InvalidInput with the
// Diffusers text. Run per call only when checks are enabled.
using Constraint = void (*)(const AttentionInputs&);

// Non-default arguments a backend can honour. Anything else given to it is an
// UnsupportedArgument error, never dropped.
struct Honours {
  bool attn_mask = false;
  bool dropout_p = false;
  bool is_causal = false;
  bool scale = false;
  bool enable_gqa = false;
};

struct Backend {
  std::string name;
  std::vector<Constraint> constraints;
  Honours honours;
  // The error text for a refused argument, e.g. "`attn_mask` is not supported for
  // flash-attn 2." (Diffusers' wording); the dispatcher adds how to fix it.
  std::string mask_refusal;
  // Requirement checks, kernel fetch, verify and load. Idempotent and thread-safe; throws
  // BackendUnavailable / KernelRefused. Called by BackendGuard, set_attention_backend and
  // AttentionImpl::set_backend, and before the first call of a backend that was never
  // activated (the DIFFUSERS_ATTN_BACKEND default, options.backend).
  std::function<void()> activate;
  // Computes attention; inputs already validated against `honours`.
  std::function<at::Tensor(const AttentionInputs&)> run;
  // The same with the log-sum-exp (B, H, Sq) float32; empty when the backend cannot produce
  // it (dispatch_attention_with_lse then refuses, naming the backends that can).
  std::function<AttentionWithLse(const AttentionInputs&)> run_with_lse;
};

// Family registration entry points (each appends its backends).
void register_native_backends(std::vector<Backend>& table);
void register_hub_backends(std::vector<Backend>& table);
void register_library_backends(std::vector<Backend>& table);
void register_python_backends(std::vector<Backend>& table);

// Every backend name, in the Diffusers enum order (list_backends() order).
const std::vector<std::string_view>& backend_names();

// The table entry, or UnknownBackend with the list of valid names.
const Backend& find_backend(std::string_view name);

}  // namespace kernelhub::attention::detail
