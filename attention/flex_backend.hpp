// The dispatcher's `flex` backend (flex_backend.cpp), registered by the native family.
#pragma once

#include <ATen/core/Tensor.h>

#include "kernelhub/attention/backend.hpp"

namespace kernelhub::attention::detail {

at::Tensor run_flex(const AttentionInputs& inputs);
AttentionWithLse run_flex_with_lse(const AttentionInputs& inputs);

}  // namespace kernelhub::attention::detail
