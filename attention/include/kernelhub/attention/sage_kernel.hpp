// SageAttention without Python: the orchestration of `sageattn` redone in C++ over the
// kernel's ops. Q is quantised to int8 per warp, K is smoothed by its mean and quantised per
// block, the attention op computes int8 QK^T (applying the softmax scale itself) and P.V:
//  - fp16 PV (sm80 path, `sageattn`, `sage`, `sage_hub`, `_sage_qk_int8_pv_fp16_cuda`): V in
//    fp16, fp32 accumulation;
//  - fp8 PV (`_sage_qk_int8_pv_fp8_cuda`, sm89 tiles; `_sage_qk_int8_pv_fp8_cuda_sm90`, sm90
//    tiles): V transposed, padded and quantised per channel to float8_e4m3fn, its scales
//    applied by the attention op.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>

#include "kernelhub/attention/backend.hpp"
#include "kernelhub/attention/lazy_op.hpp"

namespace kernelhub::attention::detail {

enum class SagePath { fp16_pv, fp8_pv_sm89, fp8_pv_sm90 };

class SageKernel {
 public:
  explicit SageKernel(std::string backend, SagePath path = SagePath::fp16_pv)
      : backend_(std::move(backend)), path_(path) {}

  // Provides the kernel once and resolves every op the orchestration calls.
  void activate(const KernelProvider& provide);

  // (B,Sq,H,D) -> (B,Sq,H,D); dtype of the input.
  at::Tensor forward(const AttentionInputs& inputs) const;
  // The same with the lse (B, H, Sq) float32 in natural log, as sageattn(return_lse=True):
  // the op's base-2 lse of the smoothed scores, converted and shifted back by q . mean(k).
  AttentionWithLse forward_with_lse(const AttentionInputs& inputs) const;

 private:
  AttentionWithLse run(const AttentionInputs& inputs, bool with_lse) const;
  at::Tensor fp8_value(const at::Tensor& v, int64_t seq_k, at::Tensor& v_scale) const;

  std::string backend_;
  SagePath path_;
  std::mutex mutex_;
  std::optional<loader::KernelOp> quant_q_;
  std::optional<loader::KernelOp> quant_k_;
  std::optional<loader::KernelOp> attention_;
  std::optional<loader::KernelOp> transpose_v_;  // fp8 paths only
  std::optional<loader::KernelOp> quant_v_;
  std::shared_ptr<const loader::LoadedKernel> kernel_;
};

}  // namespace kernelhub::attention::detail
