// kh_parallel_nccl: ProcessGroupNCCL for CUDA tensors. Only this translation unit sees the
// NCCL and CUDA headers; it links libtorch_cuda, which kh_parallel never does.
#define USE_C10D_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <string>
#include <vector>

#include "group.hpp"
#include "kernelhub/context_parallel_nccl.hpp"

namespace kernelhub::parallel {

ProcessGroup make_nccl_group(const GroupOptions& options, int cuda_device) {
  check_rank(options);
  auto impl = std::make_shared<ProcessGroup::Impl>();
  impl->rank = options.rank;
  impl->size = options.world_size;
  impl->name = "nccl";
  try {
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(cuda_device));
    const c10::intrusive_ptr<c10d::Store> store = make_store(options);
    auto nccl = c10d::ProcessGroupNCCL::Options::create();
    nccl->timeout = options.timeout;
    make_groups<c10d::ProcessGroupNCCL>(*impl, store, nccl);
  } catch (const CommunicationError&) {
    throw;
  } catch (const std::exception& error) {
    refuse_group("NCCL", options, error);
  }
  return ProcessGroup(std::move(impl));
}

}  // namespace kernelhub::parallel
