#include "kernelhub/attention/dispatch.hpp"

#include <sstream>
#include <string>

#include <c10/util/Exception.h>

#include "parallelism.hpp"
#include "state.hpp"

namespace kernelhub::attention::detail {
namespace {

// Everything below that builds a string runs only on the way to an exception.

std::string shape(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

[[noreturn]] void refuse_rank(const AttentionInputs& in) {
  throw InvalidInput(
      "Query, key, and value must be 4-D (batch, seq_len, heads, head_dim); got query " +
      shape(in.query) + ", key " + shape(in.key) + ", value " + shape(in.value) +
      ". Split the heads out of the last dimension (e.g. x.unflatten(-1, {heads, head_dim})) "
      "before dispatching.");
}

[[noreturn]] void refuse_shapes(const AttentionInputs& in, const std::string& what,
                                const std::string& fix) {
  throw InvalidInput(what + " Got query " + shape(in.query) + ", key " + shape(in.key) +
                     ", value " + shape(in.value) + " (batch, seq_len, heads, head_dim). " + fix);
}

void validate_shapes(const AttentionInputs& in) {
  const auto& [q, k, v, options] = in;
  if (q.size(0) != k.size(0) || q.size(0) != v.size(0)) {
    refuse_shapes(in, "Query, key, and value must have the same batch size.",
                  "Pass one batch for all three.");
  }
  if (q.size(3) != k.size(3) || q.size(3) != v.size(3)) {
    refuse_shapes(in, "Query, key, and value must have the same head dimension.",
                  "Project them to one head size.");
  }
  if (k.size(1) != v.size(1)) {
    refuse_shapes(in, "Key and value must have the same sequence length.",
                  "Pass key and value for the same tokens.");
  }
  if (k.size(2) != v.size(2)) {
    refuse_shapes(in, "Key and value must have the same number of heads.",
                  "Pass key and value from the same projection layout.");
  }
  const int64_t hq = q.size(2);
  const int64_t hkv = k.size(2);
  if (hkv == 0 || hq % hkv != 0) {
    refuse_shapes(in,
                  "The number of query heads must be a multiple of the number of key/value "
                  "heads.",
                  "Use a head count for key/value that divides the query's (grouped-query "
                  "attention).");
  }
  if (hq != hkv && !options.enable_gqa) {
    refuse_shapes(in,
                  "Query has " + std::to_string(hq) + " heads but key/value have " +
                      std::to_string(hkv) + ": grouped-query attention needs enable_gqa.",
                  "Pass enable_gqa = true, or repeat the key/value heads " +
                      std::to_string(hq / hkv) + " times (repeat_interleave on dim 2).");
  }
}

[[noreturn]] void refuse_argument(const std::string& what, const std::string& fix) {
  throw UnsupportedArgument(what + " " + fix);
}

void refuse_unhonoured(const Backend& backend, const AttentionOptions& options) {
  const Honours& h = backend.honours;
  if (options.attn_mask && !h.attn_mask) {
    refuse_argument(backend.mask_refusal.empty()
                        ? "`attn_mask` is not supported for " + backend.name + "."
                        : backend.mask_refusal,
                    "Pass attn_mask = nullopt, or use a backend that takes masks: native or "
                    "_native_math (any mask), flash_varlen_hub or _flash_3_varlen_hub (boolean "
                    "key-padding masks).");
  }
  if (options.dropout_p != 0.0 && !h.dropout_p) {
    refuse_argument("`dropout_p` is not supported for " + backend.name + ".",
                    "Pass dropout_p = 0 (inference), or use native, _native_math or flash_hub.");
  }
  if (options.is_causal && !h.is_causal) {
    refuse_argument("`is_causal` is not supported for " + backend.name + ".",
                    "Pass a causal attn_mask to native or _native_math, or use a backend that "
                    "honours is_causal (native, _native_flash, flash_hub).");
  }
  if (options.scale && !h.scale) {
    refuse_argument("A custom `scale` is not supported for " + backend.name + ".",
                    "Multiply the query by scale * sqrt(head_dim) and pass scale = nullopt, or "
                    "use native.");
  }
  if (options.enable_gqa && !h.enable_gqa) {
    refuse_argument("`enable_gqa` is not supported for " + backend.name + ".",
                    "Repeat the key/value heads (repeat_interleave on dim 2) and pass "
                    "enable_gqa = false, or use native.");
  }
}

// Everything a call is checked for before its backend runs.
void prepare(const Backend& backend, const AttentionInputs& inputs) {
  const auto& [query, key, value, options] = inputs;
  if (query.dim() != 4 || key.dim() != 4 || value.dim() != 4) refuse_rank(inputs);
  // Diffusers runs its constraints before the backend sees anything, so with checks on the
  // same inputs fail with the same texts.
  if (checks_enabled()) {
    for (Constraint check : backend.constraints) check(inputs);
  }
  validate_shapes(inputs);
  refuse_unhonoured(backend, options);
}

template <class Run>
auto run_aten(const Backend& backend, Run run) {
  try {
    return run();
  } catch (const c10::Error& error) {
    // ATen's own refusals (dtype mixes, unsupported head sizes, ...) reach callers as
    // dispatcher errors, with the backend named.
    throw AttentionError(backend.name + " failed: " + error.what_without_backtrace() +
                         " Set DIFFUSERS_ATTN_CHECKS=1 for the per-call input checks, or try "
                         "the native backend.");
  }
}

}  // namespace

at::Tensor run_backend(const Backend& backend, const at::Tensor& query, const at::Tensor& key,
                       const at::Tensor& value, const AttentionOptions& options) {
  const AttentionInputs inputs{query, key, value, options};
  prepare(backend, inputs);
  return run_aten(backend, [&] { return backend.run(inputs); });
}

// Before activation too: asking a backend for what it can never give fetches no kernel.
void require_lse(const Backend& backend) {
  if (backend.run_with_lse) return;
  std::string serving;  // from the table, so the list cannot go stale
  for (const auto name : backend_names()) {
    if (find_backend(name).run_with_lse)
      serving += (serving.empty() ? "" : ", ") + std::string(name);
  }
  throw UnsupportedArgument(backend.name +
                            " does not support return_lse: it cannot produce the log-sum-exp of "
                            "its scores. Use dispatch_attention for the output alone, or a "
                            "backend that returns the lse: " +
                            serving + ".");
}

AttentionWithLse run_backend_with_lse(const Backend& backend, const at::Tensor& query,
                                      const at::Tensor& key, const at::Tensor& value,
                                      const AttentionOptions& options) {
  require_lse(backend);
  const AttentionInputs inputs{query, key, value, options};
  prepare(backend, inputs);
  return run_aten(backend, [&] { return backend.run_with_lse(inputs); });
}

}  // namespace kernelhub::attention::detail

namespace kernelhub::attention {

at::Tensor dispatch_attention(const at::Tensor& query, const at::Tensor& key,
                              const at::Tensor& value, const AttentionOptions& options) {
  const detail::Backend& backend =
      options.backend ? detail::resolve_named(*options.backend) : detail::active();
  if (auto parallel = detail::parallelism_for_call()) {  // a ParallelismGuard's scope
    AttentionOptions named = options;
    named.backend = backend.name;
    return detail::run_parallel(*parallel, query, key, value, named);
  }
  return detail::run_backend(backend, query, key, value, options);
}

AttentionWithLse dispatch_attention_with_lse(const at::Tensor& query, const at::Tensor& key,
                                             const at::Tensor& value,
                                             const AttentionOptions& options) {
  if (options.backend) detail::require_lse(detail::find_backend(*options.backend));
  const detail::Backend& backend =
      options.backend ? detail::resolve_named(*options.backend) : detail::active();
  return detail::run_backend_with_lse(backend, query, key, value, options);
}

}  // namespace kernelhub::attention
