// The C++ side of bench/python_kernel_bench.py: Python-only kernels called from C++.
//   kh_python_bench first-use REPO VERSION   fresh process: interpreter start, import torch,
//                                            fetch (the cache as it is), import, one call
//   kh_python_bench per-call KERNEL_DIR [iterations] [rounds]
//       tiny CPU attention (1 x 8 x 2 x 16, fp32, one thread), ns per call, medians:
//       native          dispatch_attention, backend native (ATen SDPA)
//       python_sdpa     KERNEL_DIR's sdpa(q, k, v) (the same ATen SDPA, called from Python)
//       flash_4_hub     dispatch_attention, backend flash_4_hub (LOCAL_KERNELS names the
//                       flash-attn4 build; its device requirement relaxed, as the CPU
//                       rehearsal does)
// Prints one JSON object.
#include <kernelhub/attention_dispatch.hpp>
#include <kernelhub/python_kernel.hpp>

#include <ATen/Parallel.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/randn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernelhub/attention/requirements.hpp"

#include "bench_timing.hpp"

namespace {

using kernelhub::bench::median;
using kernelhub::bench::ns_per_call;

namespace ka = kernelhub::attention;
namespace kpy = kernelhub::python;
using Clock = std::chrono::steady_clock;

int first_use(const std::string& repo, std::uint64_t version) {
  const auto start = Clock::now();
  const auto kernel = kpy::get_kernel(repo, {.version = version});
  const auto x = at::ones({4});
  const auto out = kernel.call("identity", {x});
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (out.toTensor().data_ptr() != x.data_ptr()) return 1;
  std::printf("{\"first_use_s\": %.4f, \"module\": \"%s\"}\n", seconds,
              kernel.module_name().c_str());
  return 0;
}

int per_call(const std::string& kernel_dir, int iterations, int rounds) {
  at::set_num_threads(1);
  const auto q = at::randn({1, 8, 2, 16});
  const auto k = at::randn({1, 8, 2, 16});
  const auto v = at::randn({1, 8, 2, 16});
  const auto kernel = kpy::get_local_kernel(kernel_dir);
  ka::detail::relax_device_requirements(true);
  ka::AttentionOptions flash4;
  flash4.backend = "flash_4_hub";

  auto native = [&] { return ka::dispatch_attention(q, k, v); };
  auto python_sdpa = [&] { return kernel.call("sdpa", {q, k, v}).toTensor(); };
  auto flash_4_hub = [&] { return ka::dispatch_attention(q, k, v, flash4); };
  // Equal work first: all three give the same attention.
  if (!native().allclose(python_sdpa(), 1e-6, 1e-6) ||
      !native().allclose(flash_4_hub(), 1e-5, 1e-5)) {
    std::fprintf(stderr, "python_kernel_bench: the paths disagree\n");
    return 1;
  }
  for (int i = 0; i < 500; ++i) {  // warm-up
    native();
    python_sdpa();
    flash_4_hub();
  }
  std::vector<double> native_ns;
  std::vector<double> python_ns;
  std::vector<double> flash4_ns;
  std::vector<double> added_ns;
  for (int r = 0; r < rounds; ++r) {  // interleaved, so drift hits all alike
    native_ns.push_back(ns_per_call(native, iterations));
    python_ns.push_back(ns_per_call(python_sdpa, iterations));
    flash4_ns.push_back(ns_per_call(flash_4_hub, iterations));
    added_ns.push_back(python_ns.back() - native_ns.back());
  }
  std::printf(
      "{\"native_ns\": %.0f, \"python_sdpa_ns\": %.0f, \"added_ns\": %.0f, "
      "\"flash_4_hub_ns\": %.0f, \"iterations\": %d, \"rounds\": %d}\n",
      median(native_ns), median(python_ns), median(added_ns), median(flash4_ns), iterations,
      rounds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "first-use" && argc == 4) return first_use(argv[2], std::stoull(argv[3]));
    if (mode == "per-call" && argc >= 3) {
      return per_call(argv[2], argc > 3 ? std::atoi(argv[3]) : 2000,
                      argc > 4 ? std::atoi(argv[4]) : 21);
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kh_python_bench: %s\n", error.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: kh_python_bench first-use REPO VERSION | per-call KERNEL_DIR [iterations] "
               "[rounds]\n");
  return 2;
}
