// Context parallelism on CUDA tensors over NCCL (library kh_parallel_nccl, built when the
// NCCL and CUDA headers are found: KERNELHUB_WITH_NCCL). Everything else is as in
// <kernelhub/context_parallel.hpp>; the tensors given to ContextParallel must be on
// `cuda_device`. Set TORCH_NCCL_BLOCKING_WAIT=1 for CommStats::comm_seconds to mean time
// waited for the transfers (NCCL's wait() otherwise only orders the CUDA streams).
#pragma once

#include "kernelhub/context_parallel.hpp"

namespace kernelhub::parallel {

// Makes `cuda_device` current on this thread and forms the NCCL group over the TCPStore of
// `options` (bind_address is not used: NCCL picks its own interfaces, NCCL_SOCKET_IFNAME).
ProcessGroup make_nccl_group(const GroupOptions& options, int cuda_device);

}  // namespace kernelhub::parallel
