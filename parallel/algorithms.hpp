// The context-parallel attention algorithms on (B, S_local, H, D) slices, for options whose
// backend is already named: ring (key/value blocks passed around, partial outputs merged by
// their lse), Ulysses (all-to-all from sequence-sharded to head-sharded and back), and
// Ulysses around ring (unified).
#pragma once

#include <functional>

#include <ATen/core/Tensor.h>

#include "communicator.hpp"
#include "kernelhub/attention_dispatch.hpp"

namespace kernelhub::parallel {

using LocalAttention = std::function<at::Tensor(
    const at::Tensor&, const at::Tensor&, const at::Tensor&, const attention::AttentionOptions&)>;

// The group's slices are consecutive pieces of the sequence, in rank order.
at::Tensor ring_attention(Communicator& ring, const at::Tensor& query, const at::Tensor& key,
                          const at::Tensor& value, const attention::AttentionOptions& options,
                          bool convert_to_fp32);

// Runs `inner` on the whole sequence (of the group) for 1/size of the heads.
at::Tensor ulysses_attention(Communicator& ulysses, const at::Tensor& query, const at::Tensor& key,
                             const at::Tensor& value, const attention::AttentionOptions& options,
                             const LocalAttention& inner);

}  // namespace kernelhub::parallel
