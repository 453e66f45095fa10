#include "client/attention/sage_kernel.hpp"

#include <cmath>
#include <string>

#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mean.h>
#include <c10/core/TensorOptions.h>

#include "client/attention/flash_kernels.hpp"

namespace kernelhub::attention::detail {
namespace {

// SageAttention's per-warp granularity (sm80 path): Q tiles of 128 rows with one scale per
// 32-row warp, K scales per 64 keys; tensors in NHD layout.
constexpr int64_t kQueryTile = 128;
constexpr int64_t kQueryWarp = 32;
constexpr int64_t kKeyBlock = 64;
constexpr int64_t kLayoutNHD = 0;
constexpr int64_t kPerWarp = 2;

int64_t blocks(int64_t length, int64_t block) { return (length + block - 1) / block; }

// The kernels take head_dim 64 or 128; sageattn pads smaller ones with zeros.
int64_t padded_head_dim(const std::string& backend, int64_t d) {
  if (d <= 64) return 64;
  if (d <= 128) return 128;
  throw UnsupportedArgument(backend + ": head_dim " + std::to_string(d) +
                            " is not supported by SageAttention (at most 128). Use "
                            "flash_hub or a native backend for larger heads.");
}

at::Tensor pad_to(const at::Tensor& t, int64_t d) {
  return t.size(-1) == d ? t.contiguous() : at::constant_pad_nd(t, {0, d - t.size(-1)});
}

loader::KernelOp find_op(const std::string& backend, const loader::LoadedKernel& kernel,
                         std::string_view name) {
  auto op = loader::KernelOp::find(kernel, name);
  if (!op) {
    throw BackendUnavailable(backend + ": the kernel " + kernel.repo +
                             " does not provide the op it needs: " + op.error().message);
  }
  return std::move(*op);
}

}  // namespace

void SageKernel::activate(const KernelProvider& provide) {
  std::lock_guard lock(mutex_);
  if (attention_) return;
  auto kernel = provide();
  auto quant_q = find_op(backend_, *kernel, "quant_per_warp_int8_cuda");
  auto quant_k = find_op(backend_, *kernel, "quant_per_block_int8_fuse_sub_mean_cuda");
  auto attention = find_op(backend_, *kernel, "qk_int8_sv_f16_accum_f32_attn");
  quant_q_.emplace(std::move(quant_q));
  quant_k_.emplace(std::move(quant_k));
  attention_.emplace(std::move(attention));
  kernel_ = std::move(kernel);
}

at::Tensor SageKernel::forward(const AttentionInputs& inputs) const {
  const at::Tensor& query = inputs.query;
  if (query.scalar_type() != at::kHalf && query.scalar_type() != at::kBFloat16) {
    throw InvalidInput(backend_ + ": SageAttention takes float16 or bfloat16 inputs, got " +
                       std::string(c10::toString(query.scalar_type())) + ".");
  }
  const c10::DispatchKey key =
      c10::computeDispatchKey(query.scalar_type(), query.layout(), query.device());
  if (!attention_->has_kernel_for(key)) {
    throw BackendUnavailable(backend_ + ": the kernel " + kernel_->repo +
                             " has no implementation for " + query.device().str() + " tensors.");
  }
  const int64_t batch = query.size(0);
  const int64_t seq_q = query.size(1);
  const int64_t heads = query.size(2);
  const int64_t seq_k = inputs.key.size(1);
  const int64_t heads_kv = inputs.key.size(2);
  const int64_t d = query.size(3);
  const int64_t dp = padded_head_dim(backend_, d);
  const double sm_scale = softmax_scale(inputs);  // of the real head_dim, not the padded one

  const at::Tensor q = pad_to(query, dp);
  const at::Tensor k = pad_to(inputs.key, dp);
  const at::Tensor v = pad_to(inputs.value, dp);
  const auto f32 = query.options().dtype(at::kFloat);
  const auto i8 = query.options().dtype(at::kChar);

  // Q: int8 per 32-row warp of 128-row tiles (the attention op applies sm_scale itself).
  at::Tensor q_int8 = at::empty(q.sizes(), i8);
  at::Tensor q_scale =
      at::empty({batch, heads, blocks(seq_q, kQueryTile) * (kQueryTile / kQueryWarp)}, f32);
  quant_q_->call({q, q_int8, q_scale, kQueryTile, kQueryWarp, kLayoutNHD});

  // K: smoothed by its mean over the sequence (cancels in the softmax), then int8 per block.
  at::Tensor k_mean = at::mean(k, {1}, /*keepdim=*/false, at::kFloat).to(k.scalar_type());
  at::Tensor k_int8 = at::empty(k.sizes(), i8);
  at::Tensor k_scale = at::empty({batch, heads_kv, blocks(seq_k, kKeyBlock)}, f32);
  quant_k_->call({k, k_mean, k_int8, k_scale, kKeyBlock, kLayoutNHD});

  // P.V in fp16 with fp32 accumulation, as sageattn's sm80 path; the output keeps q's dtype.
  at::Tensor out = at::empty_like(q);
  attention_->call({q_int8, k_int8, v.to(at::kHalf), out, q_scale, k_scale, kLayoutNHD,
                    int64_t{inputs.options.is_causal ? 1 : 0}, kPerWarp, sm_scale, int64_t{0}});
  return dp == d ? out : out.narrow(-1, 0, d);
}

}  // namespace kernelhub::attention::detail
