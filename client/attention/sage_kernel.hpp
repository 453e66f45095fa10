// SageAttention without Python: the orchestration of `sageattn`'s sm80 path (quantise Q to
// int8 per warp, smooth K by its mean and quantise it per block, int8 QK^T with the softmax
// scale applied by the attention op, fp16 PV accumulated in fp32) redone in C++ over the
// kernel's ops. Shared by sage_hub (SageAttention/sage-attention
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
