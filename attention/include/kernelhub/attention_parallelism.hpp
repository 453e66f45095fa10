// The hook through which a parallel attention scheme (kernelhub::parallel's context
// parallelism) takes over attention calls, without kh_attention depending on it: an
// interface, a per-layer setter (AttentionImpl::set_parallelism in <kernelhub/attention.hpp>)
// and a process-wide scoped guard that dispatch_attention consults.
//
// Inside AttentionParallelism::forward the hook is off on that thread, so the implementation
// calls dispatch_attention / dispatch_attention_with_lse for its local blocks without
// recursing into itself.
#pragma once

#include <memory>
#include <string_view>

#include "kernelhub/attention_dispatch.hpp"

namespace kernelhub::attention {

class AttentionParallelism {
 public:
  virtual ~AttentionParallelism() = default;
  // query/key/value are this process's shards (B, S_local, H, D); options.backend is always
  // set (the caller's, the layer's, or the active backend), so every rank runs the same one.
  virtual at::Tensor forward(const at::Tensor& query, const at::Tensor& key,
                             const at::Tensor& value, const AttentionOptions& options) = 0;
};

// Routes every dispatch_attention call of the process (and every Attention layer without a
// parallelism of its own) through `parallelism` for a scope; restores the previous one on
// destruction. Guards nest. dispatch_attention_with_lse is never routed.
class ParallelismGuard {
 public:
  explicit ParallelismGuard(std::shared_ptr<AttentionParallelism> parallelism);
  ~ParallelismGuard();
  ParallelismGuard(const ParallelismGuard&) = delete;
  ParallelismGuard& operator=(const ParallelismGuard&) = delete;

 private:
  std::shared_ptr<AttentionParallelism> previous_;
};

// UnsupportedArgument, naming the backends that can, unless dispatch_attention_with_lse can
// run on `backend` (a list_backends() name; UnknownBackend for others): what ring attention
// needs. Activates nothing.
void require_return_lse(std::string_view backend);

}  // namespace kernelhub::attention
