// The Diffusers per-call constraints (attention_dispatch.py's _check_* functions), run when
// checks are enabled (DIFFUSERS_ATTN_CHECKS). Each throws InvalidInput with Diffusers' exact
// text, so messages read the same in both dispatchers.
#pragma once

#include "kernelhub/attention/backend.hpp"

namespace kernelhub::attention::detail {

void check_attn_mask_or_causal(const AttentionInputs& inputs);
void check_device(const AttentionInputs& inputs);
void check_device_cuda(const AttentionInputs& inputs);
void check_qkv_dtype_match(const AttentionInputs& inputs);
void check_qkv_dtype_bf16_or_fp16(const AttentionInputs& inputs);
void check_qkv_dtype_bf16(const AttentionInputs& inputs);
void check_shape(const AttentionInputs& inputs);
void check_head_dim_64_or_128(const AttentionInputs& inputs);

// _check_device_cuda_atleast_smXY(major, minor). A Constraint is a plain function pointer,
// so the factory becomes a template: check_device_cuda_atleast_sm<9, 0>.
void check_device_cuda_atleast(const AttentionInputs& inputs, int major, int minor);
template <int Major, int Minor>
void check_device_cuda_atleast_sm(const AttentionInputs& inputs) {
  check_device_cuda_atleast(inputs, Major, Minor);
}

}  // namespace kernelhub::attention::detail
