// enable_parallelism on a model: the only translation unit of kh_parallel with torch::nn.
#include <string>

#include "kernelhub/attention.hpp"
#include "kernelhub/context_parallel.hpp"

namespace kernelhub::parallel {

void enable_parallelism(torch::nn::Module& model, std::shared_ptr<ContextParallel> cp) {
  // Like Diffusers: refuse before anything changes, naming the layer's backend.
  attention::for_each_attention_layer(model, [&](attention::AttentionImpl& layer) {
    cp->check_backend(layer.backend() ? *layer.backend() : attention::active_backend());
  });
  attention::for_each_attention_layer(
      model, [&](attention::AttentionImpl& layer) { layer.set_parallelism(cp); });
}

void disable_parallelism(torch::nn::Module& model) {
  attention::for_each_attention_layer(
      model, [](attention::AttentionImpl& layer) { layer.set_parallelism(nullptr); });
}

}  // namespace kernelhub::parallel
