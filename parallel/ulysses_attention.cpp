// Ulysses: an all-to-all turns (B, S_local, H, D) slices of the sequence into (B, S, H/W, D)
// slices of the heads, the attention runs on the whole sequence, and the inverse all-to-all
// turns the output back. Same layout as Diffusers' SeqAllToAllDim: (B, S_local, W, H/W, D)
// with the group dimension moved first, so chunk i goes to rank i.
#include <array>

#include <ATen/ops/empty_like.h>

#include "algorithms.hpp"

namespace kernelhub::parallel {
namespace {

// (B, S_local, H, D) -> send buffer (W, S_local, B, H/W, D), contiguous.
at::Tensor heads_first(const at::Tensor& x, int64_t w) {
  const auto s = x.sizes();
  return x.reshape({s[0], s[1], w, s[2] / w, s[3]}).permute({2, 1, 0, 3, 4}).contiguous();
}

// Received (W, S_local, B, H/W, D), chunk j from rank j -> (B, W * S_local, H/W, D).
at::Tensor sequence_whole(const at::Tensor& x) {
  const auto s = x.sizes();
  return x.reshape({s[0] * s[1], s[2], s[3], s[4]}).permute({1, 0, 2, 3});
}

}  // namespace

at::Tensor ulysses_attention(Communicator& ulysses, const at::Tensor& query, const at::Tensor& key,
                             const at::Tensor& value, const attention::AttentionOptions& options,
                             const LocalAttention& inner) {
  const int64_t w = ulysses.size();
  // Q, K and V go out together; their waits overlap each other's transfers.
  std::array<at::Tensor, 3> sent{heads_first(query, w), heads_first(key, w), heads_first(value, w)};
  std::array<at::Tensor, 3> received;
  std::array<Pending, 3> ops;
  for (size_t i = 0; i < 3; ++i) {
    received[i] = at::empty_like(sent[i]);
    ops[i] = ulysses.all_to_all(received[i], sent[i]);
  }
  for (auto& op : ops) ulysses.wait(op);
  const at::Tensor out = inner(sequence_whole(received[0]), sequence_whole(received[1]),
                               sequence_whole(received[2]), options);  // (B, S, H/W, D)

  // Back: (B, W, S_local, H/W, D) -> (W, S_local, B, H/W, D); chunk j to rank j.
  const auto s = out.sizes();
  const int64_t local = s[1] / w;
  const at::Tensor back =
      out.reshape({s[0], w, local, s[2], s[3]}).permute({1, 2, 0, 3, 4}).contiguous();
  at::Tensor mine = at::empty_like(back);
  Pending op = ulysses.all_to_all(mine, back);
  ulysses.wait(op);
  // (W, S_local, B, H/W, D), chunk j = head group j -> (B, S_local, H, D).
  return mine.permute({2, 1, 0, 3, 4}).reshape({s[0], local, w * s[2], s[3]});
}

}  // namespace kernelhub::parallel
