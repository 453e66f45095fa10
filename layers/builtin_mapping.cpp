// transformers' default kernel mapping (integrations/hub_kernels.py) for the layers of
// <kernelhub/layers.hpp>, where the repos it names have native builds: liger-kernels
// (RMSNorm on cuda, rocm and npu) and mlx_rmsnorm (mps) are Python or Metal only and are
// left out; a mapping file adds them.
#include <array>

#include "kernelhub/kernelize.hpp"

namespace kernelhub::layers {

KernelMapping KernelMapping::builtin() {
  using enum trust::LayerMode;
  constexpr std::string_view kActivation = "kernels-community/activation";
  constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kActivations = {{
      {"SiLU", "Silu"},
      {"GeLU", "Gelu"},
      {"GeluTanh", "GeluTanh"},
      {"FastGELU", "FastGELU"},
      {"NewGELU", "NewGELU"},
      {"QuickGELU", "QuickGELU"},
  }};
  KernelMapping mapping;
  for (const auto& [name, layer] : kActivations) {
    mapping.add(name, {"cuda"}, {{inference | torch_compile, hub_layer(kActivation, layer, 1)}});
  }
  mapping.add("RMSNorm", {"xpu"},
              {{inference, hub_layer("kernels-community/rmsnorm", "RMSNorm", 1)}});
  const auto rotary = hub_layer("kernels-community/rotary", "apply_rotary_transformers", 2);
  mapping.add("rotary_pos_emb", {"xpu"}, {{inference, rotary}});
  mapping.add("rotary_pos_emb", {"cuda"}, rotary);
  return mapping;
}

}  // namespace kernelhub::layers
