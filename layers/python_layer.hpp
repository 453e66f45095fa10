// A Python-only kernel's layer class (`layers.<Name>` of a noarch build, liger-kernels'
// LigerRMSNorm), run in the embedded Python (kernelhub/python_kernel.hpp): its forward is
// called on an nn.Module that holds the C++ module's attributes, as kernels binds the
// forward to the module it replaces.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "kernelhub/layers/layer_kernel.hpp"
#include "kernelhub/provider/kernel_provider.hpp"

namespace kernelhub::layers::detail {

// Imports the kernel from its verified files and checks the class as kernels does (an
// nn.Module, no constructor or members of its own, a forward of one of the layer modules'
// shapes). Throws LayerRefused or LayerUnavailable.
std::shared_ptr<const LayerKernel> load_python_layer(const provider::ProvidedKernel& kernel,
                                                     std::string_view layer,
                                                     const std::string& description);

}  // namespace kernelhub::layers::detail
