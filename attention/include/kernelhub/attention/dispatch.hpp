// One attention call on a resolved backend: input validation, refusal of arguments the
// backend cannot honour, the Diffusers checks when enabled, then the backend's run.
#pragma once

#include "kernelhub/attention/backend.hpp"

namespace kernelhub::attention::detail {

at::Tensor run_backend(const Backend& backend, const at::Tensor& query, const at::Tensor& key,
                       const at::Tensor& value, const AttentionOptions& options);
// The same through backend.run_with_lse; UnsupportedArgument when the backend has none.
AttentionWithLse run_backend_with_lse(const Backend& backend, const at::Tensor& query,
                                      const at::Tensor& key, const at::Tensor& value,
                                      const AttentionOptions& options);
// UnsupportedArgument naming the backends that can, unless `backend` produces the lse.
void require_lse(const Backend& backend);

}  // namespace kernelhub::attention::detail
