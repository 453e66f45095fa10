// kernels' _get_layer_memoize: the layer of a repository, fetched, verified, loaded and made
// into a LayerKernel once per process.
#pragma once

#include <memory>

#include "kernelhub/kernelize.hpp"
#include "kernelhub/layers/layer_kernel.hpp"

namespace kernelhub::layers::detail {

// Throws LayerRefused (a rule or a check refused it: trust, verification, lockfile, op
// schemas, no such layer) or LayerUnavailable (it could not be fetched or loaded). A failure
// is not remembered: a later call tries again.
std::shared_ptr<const LayerKernel> load_layer(const LayerRepository& repository);

}  // namespace kernelhub::layers::detail
