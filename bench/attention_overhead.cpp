// Dispatch overhead of kernelhub::attention::dispatch_attention over calling ATen SDPA
// directly on the same (B,S,H,D) tensors, on tiny CPU shapes where the bookkeeping shows.
// Prints one JSON object; bench/attention_bench.py compares it with Diffusers in the same run.
//   kh_attention_overhead [iterations] [rounds]
#include <kernelhub/attention_dispatch.hpp>

#include <ATen/Parallel.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/scaled_dot_product_attention.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_timing.hpp"

using kernelhub::bench::median;
using kernelhub::bench::ns_per_call;

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 41;
  at::set_num_threads(1);  // one core, like the Python side: overhead, not parallelism
  const auto q = at::randn({1, 8, 2, 16});
  const auto k = at::randn({1, 8, 2, 16});
  const auto v = at::randn({1, 8, 2, 16});

  auto direct = [&] {
    return at::scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        .transpose(1, 2);
  };
  auto dispatched = [&] { return kernelhub::attention::dispatch_attention(q, k, v); };

  // Same answer first: the benchmark compares equal work.
  if (!direct().allclose(dispatched(), 1e-6, 1e-6)) {
    std::fprintf(stderr, "attention_overhead: dispatch_attention and SDPA disagree\n");
    return 1;
  }
  for (int i = 0; i < 2000; ++i) {  // warm-up
    direct();
    dispatched();
  }
  std::vector<double> direct_ns;
  std::vector<double> dispatch_ns;
  std::vector<double> added_ns;
  for (int r = 0; r < rounds; ++r) {  // interleaved pairs, so drift hits both alike
    direct_ns.push_back(ns_per_call(direct, iterations));
    dispatch_ns.push_back(ns_per_call(dispatched, iterations));
    added_ns.push_back(dispatch_ns.back() - direct_ns.back());
  }
  // The added cost is a few percent of a call: the median of the per-pair differences is
  // steadier than the difference of the medians.
  std::printf(
      "{\"backend\": \"%s\", \"iterations\": %d, \"rounds\": %d, \"direct_ns\": %.1f, "
      "\"dispatch_ns\": %.1f, \"added_ns\": %.1f}\n",
      kernelhub::attention::active_backend().c_str(), iterations, rounds, median(direct_ns),
      median(dispatch_ns), median(added_ns));
  return 0;
}
