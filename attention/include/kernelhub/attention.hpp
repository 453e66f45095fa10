// kernelhub attention dispatcher: one call, every backend name of the Diffusers dispatcher,
// and an Attention module whose layers carry their own backend.
//
//   #include <kernelhub/attention.hpp>
//   namespace ka = kernelhub::attention;
//   ka::BackendGuard guard("flash_hub");            // fetches + verifies + loads the kernel
//   at::Tensor out = ka::dispatch_attention(q, k, v); // (batch, seq, heads, head_dim)
//
// dispatch_attention, BackendGuard, the error types and the configuration variables are
// declared in <kernelhub/attention_dispatch.hpp> (included here).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "kernelhub/attention_dispatch.hpp"
#include "kernelhub/attention_parallelism.hpp"

namespace kernelhub::attention {

// An attention layer: holds its own backend (unset: the guard/env backend of the process)
// and runs dispatch_attention with it.
class AttentionImpl : public torch::nn::Module {
 public:
  at::Tensor forward(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                     AttentionOptions options = {});
  // Activates and sets this layer's backend; nullopt clears it.
  void set_backend(std::optional<std::string_view> backend);
  const std::optional<std::string>& backend() const { return backend_; }
  // Runs this layer's calls through `parallelism` (context parallelism: see
  // kernelhub::parallel::enable_parallelism); null goes back to the ParallelismGuard's, if
  // any, else to plain dispatch.
  void set_parallelism(std::shared_ptr<AttentionParallelism> parallelism) {
    parallelism_ = std::move(parallelism);
  }
  const std::shared_ptr<AttentionParallelism>& parallelism() const { return parallelism_; }

 private:
  std::optional<std::string> backend_;
  std::shared_ptr<AttentionParallelism> parallelism_;
};
TORCH_MODULE(Attention);

// Calls `visit` on every Attention layer in the tree rooted at `model`, the root included.
void for_each_attention_layer(torch::nn::Module& model,
                              const std::function<void(AttentionImpl&)>& visit);

// Activates `name`, sets it on every Attention layer of `model` and as the process-wide
// backend. Layers of other models that were never set keep using the guard/env backend.
void set_attention_backend(torch::nn::Module& model, std::string_view name);
// Clears the backend of every Attention layer of `model`; the process-wide backend stays.
void reset_attention_backend(torch::nn::Module& model);

}  // namespace kernelhub::attention
