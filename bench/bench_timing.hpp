// What the C++ benchmarks time with: the mean cost of a call over a loop, and the median of
// rounds (robust to a round a scheduler hiccup slowed).
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace kernelhub::bench {

template <typename F>
double ns_per_call(F&& call, int iterations) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) call();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return std::chrono::duration<double, std::nano>(elapsed).count() / iterations;
}

inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace kernelhub::bench
