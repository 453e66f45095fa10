// The dispatcher's side of <kernelhub/attention_parallelism.hpp>: which parallelism (if any)
// takes the current call, and running it with the hook off on this thread.
#pragma once

#include <memory>

#include "kernelhub/attention_parallelism.hpp"

namespace kernelhub::attention::detail {

// The guard's parallelism, or null when none is set or this thread is already inside one.
std::shared_ptr<AttentionParallelism> parallelism_for_call();

// parallelism.forward with the hook off on this thread; options.backend must be set.
at::Tensor run_parallel(AttentionParallelism& parallelism, const at::Tensor& query,
                        const at::Tensor& key, const at::Tensor& value,
                        const AttentionOptions& options);

}  // namespace kernelhub::attention::detail
