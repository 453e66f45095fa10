// enable_parallelism on a model: the only translation unit of kh_parallel with torch::nn.
#include <string>

#include "kernelhub/attention.hpp"
#include "kernelhub/context_parallel.hpp"

namespace kernelhub::parallel {
namespace {

template <class Visit>
void for_each_layer(torch::nn::Module& model, Visit visit) {
  if (auto* layer = dynamic_cast<attention::AttentionImpl*>(&model)) visit(*layer);
  for (const auto& child : model.modules(/*include_self=*/false)) {
    if (auto* layer = dynamic_cast<attention::AttentionImpl*>(child.get())) visit(*layer);
  }
}

}  // namespace

void enable_parallelism(torch::nn::Module& model, std::shared_ptr<ContextParallel> cp) {
  // Like Diffusers: refuse before anything changes, naming the layer's backend.
  for_each_layer(model, [&](attention::AttentionImpl& layer) {
    cp->check_backend(layer.backend() ? *layer.backend() : attention::active_backend());
  });
  for_each_layer(model, [&](attention::AttentionImpl& layer) { layer.set_parallelism(cp); });
}

void disable_parallelism(torch::nn::Module& model) {
  for_each_layer(model, [](attention::AttentionImpl& layer) { layer.set_parallelism(nullptr); });
}

}  // namespace kernelhub::parallel
