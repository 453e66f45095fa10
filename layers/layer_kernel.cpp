// LayerKernel's forwards for the signature a kernel does not have: kernelize binds a kernel
// only to modules of its own signature, so these are never reached through it.
#include "kernelhub/layers/layer_kernel.hpp"

namespace kernelhub::layers {

at::Tensor LayerKernel::forward(const KernelizableLayer& /*module*/,
                                const at::Tensor& /*x*/) const {
  TORCH_CHECK(false, describe(), " has no forward(x)");
}

std::tuple<at::Tensor, at::Tensor> LayerKernel::forward(
    const KernelizableLayer& /*module*/, const at::Tensor& /*q*/, const at::Tensor& /*k*/,
    const at::Tensor& /*cos*/, const at::Tensor& /*sin*/, int64_t /*unsqueeze_dim*/) const {
  TORCH_CHECK(false, describe(), " has no forward(q, k, cos, sin, unsqueeze_dim)");
}

}  // namespace kernelhub::layers
