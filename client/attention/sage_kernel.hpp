// SageAttention without Python: the orchestration of `sageattn` (quantise Q per block with
// the softmax scale folded in, smooth and quantise K per block, int8 QK with fp32-accumulated
// PV) redone in C++ over the kernel's ops. Shared by sage_hub (SageAttention/sage-attention
// from the Hub) and sage (a local sageattention build).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>

#include "client/attention/backend.hpp"
#include "client/attention/lazy_op.hpp"

namespace kernelhub::attention::detail {

class SageKernel {
 public:
  explicit SageKernel(std::string backend) : backend_(std::move(backend)) {}

  // Provides the kernel once and resolves every op the orchestration calls.
  void activate(const KernelProvider& provide);

  // (B,Sq,H,D) -> (B,Sq,H,D); dtype of the input.
  at::Tensor forward(const AttentionInputs& inputs) const;

 private:
  std::string backend_;
  std::mutex mutex_;
  std::optional<loader::KernelOp> quant_q_;
  std::optional<loader::KernelOp> quant_k_;
  std::optional<loader::KernelOp> attention_;
  std::shared_ptr<const loader::LoadedKernel> kernel_;
};

}  // namespace kernelhub::attention::detail
