// Ring attention. Every rank keeps its query slice; the key/value slices travel around the
// ring (rank r sends to r+1, receives from r-1), the next exchange posted before the current
// block is computed so the two overlap. Partial outputs are merged with Diffusers' formula
// (anchors §5): out = prev_out - sigmoid(lse - prev_lse) * (prev_out - out),
//              lse = prev_lse - logsigmoid(prev_lse - lse).
// Causal: the slices are consecutive, so the block of an earlier rank is seen whole, the own
// block causally, and a later rank's block not at all (skipped, never computed).
#include <optional>
#include <utility>

#include <ATen/ops/cat.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/log_sigmoid.h>
#include <ATen/ops/sigmoid.h>

#include "algorithms.hpp"

namespace kernelhub::parallel {
namespace {

struct Partial {
  at::Tensor out;  // (B, S, H, D)
  at::Tensor lse;  // (B, S, H, 1)
};

Partial block(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
              attention::AttentionOptions options, bool causal, bool convert_to_fp32) {
  options.is_causal = causal;
  auto result = attention::dispatch_attention_with_lse(query, key, value, options);
  at::Tensor out = convert_to_fp32 ? result.out.to(at::kFloat) : result.out;
  return {out, result.lse.transpose(1, 2).unsqueeze(-1).to(out.scalar_type())};
}

void merge(Partial& acc, const Partial& next) {
  acc.out = acc.out - at::sigmoid(next.lse - acc.lse) * (acc.out - next.out);
  acc.lse = acc.lse - at::log_sigmoid(acc.lse - next.lse);
}

}  // namespace

at::Tensor ring_attention(Communicator& ring, const at::Tensor& query, const at::Tensor& key,
                          const at::Tensor& value, const attention::AttentionOptions& options,
                          bool convert_to_fp32) {
  const int size = ring.size();
  const int rank = ring.rank();
  const int next_rank = (rank + 1) % size;
  const int prev_rank = (rank + size - 1) % size;
  const int64_t key_numel = key.numel();
  // Key and value travel as one buffer: one send and one receive per step.
  at::Tensor current = at::cat({key.reshape(-1), value.reshape(-1)});
  std::optional<Partial> acc;
  for (int step = 0; step < size; ++step) {
    const int owner = (rank - step + size) % size;  // whose slice `current` is
    Pending sending;
    Pending receiving;
    at::Tensor incoming;
    if (step + 1 < size) {
      incoming = at::empty_like(current);
      sending = ring.send(current, next_rank, step);
      receiving = ring.recv(incoming, prev_rank, step);
    }
    const bool skip = options.is_causal && owner > rank;
    if (!skip) {
      const at::Tensor k = current.narrow(0, 0, key_numel).view(key.sizes());
      const at::Tensor v = current.narrow(0, key_numel, value.numel()).view(value.sizes());
      Partial partial =
          block(query, k, v, options, options.is_causal && owner == rank, convert_to_fp32);
      if (acc) {
        merge(*acc, partial);
      } else {
        acc = std::move(partial);
      }
    }
    if (step + 1 < size) {
      ring.wait(receiving);
      ring.wait(sending);
      current = std::move(incoming);
    }
  }
  // Step 0 is the own block, never skipped.
  return acc->out.to(query.scalar_type());
}

}  // namespace kernelhub::parallel
