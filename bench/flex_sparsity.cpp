// kernelhub flex: block-sparse work is skipped. Times one dense, one causal and one
// sliding-window-256 call at 4096 tokens (fp32, CPU) in one run and prints their ratios
// (issue 12's goals: causal <= 0.6x dense, window <= 0.15x). bench/flex_bench.py runs it with
// --json next to Python's eager flex_attention on the same shapes.
// Usage: kh_flex_sparsity [--seq N] [--heads H] [--head-dim D] [--repeats R] [--json]
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include <ATen/ops/randn.h>

#include "kernelhub/flex_attention.hpp"

namespace ka = kernelhub::attention;

namespace {

double best_ms(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
               const ka::FlexOptions& options, int repeats) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const auto result = ka::flex_attention(q, k, v, options);
    (void)result.out.sum().item<double>();
    best = std::min(
        best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t seq = 4096;
  int64_t heads = 4;
  int64_t head_dim = 64;
  int repeats = 3;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--json") {
      json = true;
      continue;
    }
    if (i + 1 >= argc) break;
    const long long value = std::atoll(argv[i + 1]);
    if (flag == "--seq") seq = value;
    if (flag == "--heads") heads = value;
    if (flag == "--head-dim") head_dim = value;
    if (flag == "--repeats") repeats = static_cast<int>(value);
    ++i;
  }
  const at::Tensor q = at::randn({1, seq, heads, head_dim});
  const at::Tensor k = at::randn({1, seq, heads, head_dim});
  const at::Tensor v = at::randn({1, seq, heads, head_dim});
  const ka::MaskMod causal = [](const at::Tensor&, const at::Tensor&, const at::Tensor& qi,
                                const at::Tensor& kv) { return qi.ge(kv); };
  const ka::MaskMod window = [](const at::Tensor&, const at::Tensor&, const at::Tensor& qi,
                                const at::Tensor& kv) {
    return qi.ge(kv).logical_and(qi.sub(kv).lt(256));
  };
  ka::FlexOptions dense_options;
  ka::FlexOptions causal_options;
  causal_options.block_mask = ka::BlockMask::from_mask_mod(causal, 1, heads, seq, seq);
  ka::FlexOptions window_options;
  window_options.block_mask = ka::BlockMask::from_mask_mod(window, 1, heads, seq, seq);

  const double dense = best_ms(q, k, v, dense_options, repeats);
  const double causal_ms = best_ms(q, k, v, causal_options, repeats);
  const double window_ms = best_ms(q, k, v, window_options, repeats);
  if (json) {
    std::cout << "{\"dense_ms\": " << dense << ", \"causal_ms\": " << causal_ms
              << ", \"window_ms\": " << window_ms
              << ", \"causal_density\": " << causal_options.block_mask->density()
              << ", \"window_density\": " << window_options.block_mask->density() << "}\n";
    return 0;
  }
  std::cout << "| case (S=" << seq << ", H=" << heads << ", D=" << head_dim
            << ", fp32, CPU) | tiles computed | ms (best of " << repeats
            << ") | vs dense |\n|---|---:|---:|---:|\n"
            << "| dense | 100% | " << dense << " | 1.00x |\n"
            << "| causal | " << causal_options.block_mask->density() * 100 << "% | " << causal_ms
            << " | " << causal_ms / dense << "x |\n"
            << "| sliding window 256 | " << window_options.block_mask->density() * 100 << "% | "
            << window_ms << " | " << window_ms / dense << "x |\n";
  return 0;
}
