// Calling flash-attention kernels through their published op schemas
// (research/kernel-artifacts.md §3): FA2 `fwd` / `varlen_fwd` and FA3 `fwd` (batch or
// varlen). Shared by the hub backends (flash_hub, ...) and the local library backends
// (flash, _flash_3, ...): the ops are the same, only where the kernel comes from differs.
// The Python wrappers' argument handling (default scale, head-dim padding, contiguity,
// packing for varlen) is redone here because a C++ process has no Python wrappers.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include "kernelhub/attention/backend.hpp"

#include "kernelhub/attention/lazy_op.hpp"
#include "kernelhub/loader/kernel_ops.hpp"

namespace kernelhub::attention::detail {

// Table entries for the flash-attention families; `varlen` picks varlen_fwd / cu_seqlens
// and honours key-padding masks. The op must be FA2 `fwd`/`varlen_fwd` or FA3 `fwd`.
Backend make_flash2_backend(std::string name, const std::shared_ptr<LazyOp>& op, bool varlen);
Backend make_flash3_backend(std::string name, const std::shared_ptr<LazyOp>& op, bool varlen);

}  // namespace kernelhub::attention::detail
