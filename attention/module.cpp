// The Attention module and the model-wide setters: the only translation unit with the
// torch::nn headers.
#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include "kernelhub/attention.hpp"
#include "kernelhub/attention/dispatch.hpp"
#include "kernelhub/util/strings.hpp"
#include "parallelism.hpp"
#include "state.hpp"

namespace kernelhub::attention {
void for_each_attention_layer(torch::nn::Module& model,
                              const std::function<void(AttentionImpl&)>& visit) {
  // modules() can only include the root when it is owned by a shared_ptr.
  if (auto* layer = dynamic_cast<AttentionImpl*>(&model)) visit(*layer);
  for (const auto& child : model.modules(/*include_self=*/false)) {
    if (auto* layer = dynamic_cast<AttentionImpl*>(child.get())) visit(*layer);
  }
}

at::Tensor AttentionImpl::forward(const at::Tensor& query, const at::Tensor& key,
                                  const at::Tensor& value, AttentionOptions options) {
  const std::shared_ptr<AttentionParallelism> parallel =
      parallelism_ ? parallelism_ : detail::parallelism_for_call();
  if (options.backend && !parallel) return dispatch_attention(query, key, value, options);
  // A layer that was never set follows the guard/env backend, not another model's
  // set_attention_backend (Diffusers #14249).
  const detail::Backend& backend = options.backend ? detail::resolve_named(*options.backend)
                                   : backend_      ? detail::resolve_named(*backend_)
                                                   : detail::scoped();
  if (parallel) {
    options.backend = backend.name;  // every rank runs the backend this layer would
    return detail::run_parallel(*parallel, query, key, value, options);
  }
  return detail::run_backend(backend, query, key, value, options);
}

void AttentionImpl::set_backend(std::optional<std::string_view> backend) {
  if (!backend) {
    backend_.reset();
    return;
  }
  // Activating here fetches a hub kernel now (Diffusers' per-layer setter skips it, #13284).
  detail::ensure_activated(detail::find_backend(*backend));
  backend_ = std::string(*backend);
}

void set_attention_backend(torch::nn::Module& model, std::string_view name) {
  // Diffusers' ModelMixin.set_attention_backend lowercases; the guard and the per-layer
  // setter do not.
  const std::string lowered = util::ascii_lower(name);
  const detail::Backend& backend = detail::find_backend(lowered);
  detail::ensure_activated(backend);
  for_each_attention_layer(model, [&](AttentionImpl& layer) { layer.set_backend(backend.name); });
  detail::set_active(backend);
}

void reset_attention_backend(torch::nn::Module& model) {
  for_each_attention_layer(model, [](AttentionImpl& layer) { layer.set_backend(std::nullopt); });
}

}  // namespace kernelhub::attention
