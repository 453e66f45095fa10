// Issue 25: what kernelize costs. One JSON object (bench/layers_bench.py prints it beside the
// same figures for Python `kernels`, measured in the same run):
//   layer: a kernelized SiluAndMul on a tiny input (1 x 16, fp32, one thread) against the
//          direct call of its op (the output allocated and silu_and_mul called through the
//          dispatcher, as the adapter does); added_ns is the median of per-round differences.
//          Goal: < 1 us.
//   python_layer: the same for liger-kernels' LigerRMSNorm (a Python layer) against ATen's
//          RMSNorm, for the record (a Python call per forward).
//   block: the Llama block of tests/torch_support/llama_block.hpp, plain ATen vs
//          kernelized (rmsnorm, activation, rotary), ns per forward.
// Everything runs under c10::InferenceMode, as an inference app does.
//   kh_layers_bench FIXTURE_SRC [iterations] [rounds] [block_iterations]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/randn.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>

#include "kernelhub/kernelize.hpp"
#include "kernelhub/loader/kernel_ops.hpp"
#include "torch_support/llama_block.hpp"

#include "bench_timing.hpp"

namespace fs = std::filesystem;
namespace kl = kernelhub::layers;

namespace {

using kernelhub::bench::median;
using kernelhub::bench::ns_per_call;

// Interleaved rounds of two calls: their medians and the median of per-round differences.
template <typename A, typename B>
nlohmann::json compare(A&& base, B&& measured, int iterations, int rounds, const char* base_name,
                       const char* measured_name) {
  for (int i = 0; i < iterations; ++i) {
    base();
    measured();
  }
  std::vector<double> b, m, added;
  for (int r = 0; r < rounds; ++r) {
    b.push_back(ns_per_call(base, iterations));
    m.push_back(ns_per_call(measured, iterations));
    added.push_back(m.back() - b.back());
  }
  return {{base_name, median(b)}, {measured_name, median(m)}, {"added_ns", median(added)}};
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: kh_layers_bench FIXTURE_SRC [iterations] [rounds] [block_iterations]\n");
    return 2;
  }
  const fs::path src = argv[1];
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 5000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 31;
  const int block_iterations = argc > 4 ? std::atoi(argv[4]) : 50;
  at::set_num_threads(1);
  // An inference app's setting: no autograd graph is recorded by either side.
  const c10::InferenceMode inference;

  kl::KernelMapping mapping;
  mapping.add("SiluAndMul", {"cpu"}, kl::local_layer(src / "activation-v1", "SiluAndMul"));
  mapping.add("RMSNorm", {"cpu"}, kl::local_layer(src / "rmsnorm-v1", "RMSNorm"));
  mapping.add("rotary_pos_emb", {"cpu"},
              kl::local_layer(src / "rotary-v2", "apply_rotary_transformers"));
  nlohmann::json out;

  // The layer against its op.
  kl::SiluAndMul act;
  if (kl::kernelize(*act, mapping, {.device = "cpu"}).bound_count() != 1) return 1;
  const auto loaded = kernelhub::loader::loaded_kernels();
  const auto kernel = std::find_if(loaded.begin(), loaded.end(), [](const auto& k) {
    return k->ops_namespace.rfind("_activation_", 0) == 0;
  });
  if (kernel == loaded.end()) return 1;
  const auto op = kernelhub::loader::KernelOp::find(**kernel, "silu_and_mul");
  if (!op) return 1;
  const at::Tensor x = at::randn({1, 16});
  const auto direct = [&] {
    at::Tensor o = at::empty({1, 8}, x.options());
    std::vector<c10::IValue> stack{o, x};
    op->handle().callBoxed(stack);
    return o;
  };
  const auto layer = [&] { return act(x); };
  if (!at::allclose(direct(), layer())) return 1;
  out["layer"] = compare(direct, layer, iterations, rounds, "direct_ns", "kernelized_ns");

  // A Python layer against ATen's RMSNorm.
  kl::RMSNorm norm(kl::RMSNormOptions(16));
  auto python_norm = std::dynamic_pointer_cast<kl::RMSNormImpl>(norm->clone());
  kl::KernelMapping liger;
  liger.add("RMSNorm", {"cpu"}, kl::local_layer(src / "liger-kernels-v3", "LigerRMSNorm"));
  if (kl::kernelize(*python_norm, liger, {.device = "cpu"}).bound_count() != 1) return 1;
  const auto aten = [&] { return norm(x); };
  const auto python = [&] { return python_norm->forward(x); };
  out["python_layer"] =
      compare(aten, python, std::max(1, iterations / 10), rounds, "aten_ns", "kernelized_ns");

  // The block, plain and kernelized.
  kernelhub::testing::LlamaBlock plain(256, 4, 512);
  const auto bound = std::dynamic_pointer_cast<kernelhub::testing::LlamaBlockImpl>(plain->clone());
  if (kl::kernelize(*bound, mapping, {.device = "cpu"}).bound_count() != 4) return 1;
  const at::Tensor hidden = at::randn({1, 64, 256});
  const auto tables = kernelhub::testing::rotary_tables(1, 64, 64);
  const at::Tensor& cos = std::get<0>(tables);
  const at::Tensor& sin = std::get<1>(tables);
  const auto block_plain = [&] { return plain->forward(hidden, cos, sin); };
  const auto block_bound = [&] { return bound->forward(hidden, cos, sin); };
  const auto difference = (block_plain() - block_bound()).abs().max().item<double>();
  auto block = compare(block_plain, block_bound, block_iterations, std::max(3, rounds / 4),
                       "aten_ns", "kernelized_ns");
  block["ratio"] = block["kernelized_ns"].get<double>() / block["aten_ns"].get<double>();
  block["max_abs_difference"] = difference;
  out["block"] = block;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kh_layers_bench: %s\n", error.what());
    return 1;
  }
}
