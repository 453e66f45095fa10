#include "kernelhub/attention/sage_kernel.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/einsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mean.h>
#include <c10/core/TensorOptions.h>

#include "flash_kernels.hpp"

namespace kernelhub::attention::detail {
namespace {

// The kernels' tiles fix the quantisation granularity: Q scales per warp of a Q tile, K
// scales per key block, V padded to whole key tiles (sm80/sm89: 128/32/64, sm90: 64/16/128).
struct Tiles {
  int64_t query_tile;
  int64_t query_warp;
  int64_t key_block;
};
constexpr Tiles kSm80Tiles{128, 32, 64};
constexpr Tiles kSm90Tiles{64, 16, 128};
constexpr double kFp8Max = 448.0;  // largest float8_e4m3fn
constexpr int64_t kLayoutHND = 1;
constexpr int64_t kLayoutNHD = 0;
constexpr int64_t kPerWarp = 2;
constexpr double kLog2e = 1.44269504;  // what sageattn divides the base-2 lse by

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
  const char* attention_op = path_ == SagePath::fp16_pv ? "qk_int8_sv_f16_accum_f32_attn"
                             : path_ == SagePath::fp8_pv_sm89
                                 ? "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn"
                                 : "qk_int8_sv_f8_accum_f32_fuse_v_scale_attn_inst_buf_sm90";
  auto attention = find_op(backend_, *kernel, attention_op);
  if (path_ != SagePath::fp16_pv) {
    transpose_v_.emplace(find_op(backend_, *kernel, "transpose_pad_permute_cuda"));
    quant_v_.emplace(find_op(backend_, *kernel, "scale_fuse_quant_cuda"));
  }
  quant_q_.emplace(std::move(quant_q));
  quant_k_.emplace(std::move(quant_k));
  attention_.emplace(std::move(attention));
  kernel_ = std::move(kernel);
}

at::Tensor SageKernel::forward(const AttentionInputs& inputs) const {
  return run(inputs, false).out;
}

AttentionWithLse SageKernel::forward_with_lse(const AttentionInputs& inputs) const {
  return run(inputs, true);
}

AttentionWithLse SageKernel::run(const AttentionInputs& inputs, bool with_lse) const {
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

  const Tiles tiles = path_ == SagePath::fp8_pv_sm90 ? kSm90Tiles : kSm80Tiles;
  // Q: int8 per warp of each Q tile (the attention op applies sm_scale itself).
  at::Tensor q_int8 = at::empty(q.sizes(), i8);
  at::Tensor q_scale = at::empty(
      {batch, heads, blocks(seq_q, tiles.query_tile) * (tiles.query_tile / tiles.query_warp)}, f32);
  quant_q_->call({q, q_int8, q_scale, tiles.query_tile, tiles.query_warp, kLayoutNHD});

  // K: smoothed by its mean over the sequence (cancels in the softmax), then int8 per block.
  at::Tensor k_mean = at::mean(k, {1}, /*keepdim=*/false, at::kFloat).to(k.scalar_type());
  at::Tensor k_int8 = at::empty(k.sizes(), i8);
  at::Tensor k_scale = at::empty({batch, heads_kv, blocks(seq_k, tiles.key_block)}, f32);
  quant_k_->call({k, k_mean, k_int8, k_scale, tiles.key_block, kLayoutNHD});

  const int64_t causal = inputs.options.is_causal ? 1 : 0;
  const int64_t return_lse = with_lse ? 1 : 0;
  at::Tensor out = at::empty_like(q);  // the output keeps q's dtype
  std::vector<c10::IValue> returned;
  if (path_ == SagePath::fp16_pv) {
    // P.V in fp16 with fp32 accumulation, as sageattn's sm80 path.
    returned = attention_->call({q_int8, k_int8, v.to(at::kHalf), out, q_scale, k_scale, kLayoutNHD,
                                 causal, kPerWarp, sm_scale, return_lse});
  } else {
    at::Tensor v_scale;
    const at::Tensor v_fp8 = fp8_value(v, tiles.key_block, v_scale);
    returned = attention_->call({q_int8, k_int8, v_fp8, out, q_scale, k_scale, v_scale, kLayoutNHD,
                                 causal, kPerWarp, sm_scale, return_lse});
  }
  AttentionWithLse result{dp == d ? out : out.narrow(-1, 0, d), {}};
  if (with_lse) {
    if (returned.size() != 1 || !returned[0].isTensor() ||
        returned[0].toTensor().sizes() != at::IntArrayRef({batch, heads, seq_q})) {
      throw BackendUnavailable(backend_ + ": the kernel " + kernel_->repo +
                               " returned no (batch, heads, seq_q) lse; this build cannot serve "
                               "return_lse.");
    }
    // Smoothing K by its mean lowered every score of a query row by q . mean(k) * sm_scale:
    // the softmax does not see it, the lse does.
    const int64_t group = heads / heads_kv;
    const at::Tensor mean_per_head = k_mean.to(at::kFloat).repeat_interleave(group, 1);  // (B,H,D)
    const at::Tensor shift =
        at::einsum("bshd,bhd->bhs", {q.to(at::kFloat), mean_per_head}).mul_(sm_scale);
    result.lse = returned[0].toTensor().div(kLog2e).add_(shift);
  }
  return result;
}

// V for the fp8 paths: (B, Hk, D, S padded to whole key tiles), quantised per channel.
at::Tensor SageKernel::fp8_value(const at::Tensor& v, int64_t key_tile, at::Tensor& v_scale) const {
  const int64_t batch = v.size(0);
  const int64_t seq_k = v.size(1);
  const int64_t heads_kv = v.size(2);
  const int64_t d = v.size(3);
  at::Tensor transposed =
      at::empty({batch, heads_kv, d, blocks(seq_k, key_tile) * key_tile}, v.options());
  transpose_v_->call({v, transposed, kLayoutNHD});
  at::Tensor v_fp8 = at::empty(transposed.sizes(), v.options().dtype(at::kFloat8_e4m3fn));
  v_scale = at::empty({batch, heads_kv, d}, v.options().dtype(at::kFloat));
  quant_v_->call({transposed, v_fp8, v_scale, seq_k, kFp8Max, kLayoutHND});
  return v_fp8;
}

}  // namespace kernelhub::attention::detail
