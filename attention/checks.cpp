#include "kernelhub/attention/checks.hpp"

#include <string>

#include "kernelhub/attention/requirements.hpp"
#include "kernelhub/loader/kernel_loader.hpp"

namespace kernelhub::attention::detail {

void check_attn_mask_or_causal(const AttentionInputs& inputs) {
  if (inputs.options.attn_mask && inputs.options.is_causal) {
    throw InvalidInput("`is_causal` cannot be True when `attn_mask` is not None.");
  }
}

void check_device(const AttentionInputs& inputs) {
  const auto& [q, k, v, options] = inputs;
  if (q.device() != k.device() || q.device() != v.device()) {
    throw InvalidInput("Query, key, and value must be on the same device.");
  }
  if (q.scalar_type() != k.scalar_type() || q.scalar_type() != v.scalar_type()) {
    throw InvalidInput("Query, key, and value must have the same dtype.");
  }
}

void check_device_cuda(const AttentionInputs& inputs) {
  check_device(inputs);
  // ROCm tensors are of device type cuda too, as in PyTorch.
  if (!inputs.query.is_cuda()) {
    throw InvalidInput("Query, key, and value must be on a CUDA device.");
  }
}

void check_device_cuda_atleast(const AttentionInputs& inputs, int major, int minor) {
  check_device_cuda(inputs);
  const auto capability = loader::cuda_compute_capability(inputs.query.device().index());
  // Unknown capability (no CUDA runtime library to ask) counts as too old: the check
  // exists to stop a kernel from running where it cannot.
  if (!capability || *capability < std::pair{major, minor}) {
    throw InvalidInput(
        "Query, key, and value must be on a CUDA device with compute capability >= " +
        std::to_string(major) + "." + std::to_string(minor) + ".");
  }
}

void check_qkv_dtype_match(const AttentionInputs& inputs) {
  if (inputs.query.scalar_type() != inputs.key.scalar_type()) {
    throw InvalidInput("Query and key must have the same dtype.");
  }
  if (inputs.query.scalar_type() != inputs.value.scalar_type()) {
    throw InvalidInput("Query and value must have the same dtype.");
  }
}

void check_qkv_dtype_bf16_or_fp16(const AttentionInputs& inputs) {
  check_qkv_dtype_match(inputs);
  const auto dtype = inputs.query.scalar_type();
  if (dtype != at::kBFloat16 && dtype != at::kHalf) {
    throw InvalidInput("Query, key, and value must be either bfloat16 or float16.");
  }
}

void check_qkv_dtype_bf16(const AttentionInputs& inputs) {
  check_qkv_dtype_match(inputs);
  if (inputs.query.scalar_type() != at::kBFloat16) {
    throw InvalidInput("Query, key, and value must be bfloat16.");
  }
}

void check_shape(const AttentionInputs& inputs) {
  // The dispatcher has already refused tensors that are not 4-D, so size(-3) exists.
  const auto& [q, k, v, options] = inputs;
  if (q.size(-1) != k.size(-1)) {
    throw InvalidInput("Query and key must have the same head dimension.");
  }
  if (k.size(-3) != v.size(-3)) {
    throw InvalidInput("Key and value must have the same sequence length.");
  }
  if (options.attn_mask && options.attn_mask->dim() > 0 &&
      options.attn_mask->size(-1) != k.size(-3)) {
    throw InvalidInput("Attention mask must match the key's sequence length.");
  }
}

void check_head_dim_64_or_128(const AttentionInputs& inputs) {
  const int64_t head_dim = inputs.query.size(-1);
  if (head_dim != 64 && head_dim != 128) {
    throw InvalidInput("Query, key, and value must have a head dimension of 64 or 128, got " +
                       std::to_string(head_dim) + ".");
  }
}

}  // namespace kernelhub::attention::detail
