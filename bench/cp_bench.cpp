// One rank of bench/cp_bench.py: context-parallel attention (ring, Ulysses, unified) on this
// rank's slice of a (1, S, H, D) sequence, or one process on the whole sequence (--mode
// single), timed per call; prints one JSON line with the time per call, the part of it spent
// waiting on communication (CommStats) and the bytes this rank sent. Built twice: kh_cp_bench
// (Gloo, CPU) and, with NCCL, kh_cp_bench_nccl (--device cuda).
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include <ATen/Parallel.h>
#include <ATen/ops/randn.h>

#include "kernelhub/context_parallel.hpp"
#ifdef KH_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>

#include "kernelhub/context_parallel_nccl.hpp"
#endif

namespace ka = kernelhub::attention;
namespace kp = kernelhub::parallel;

namespace {

void synchronize([[maybe_unused]] const at::Device& device) {
#ifdef KH_WITH_NCCL
  if (device.is_cuda()) c10::cuda::device_synchronize();
#endif
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> a;
  for (int i = 1; i + 1 < argc; i += 2) a[std::string(argv[i]).substr(2)] = argv[i + 1];
  auto num = [&](const std::string& k, int d) { return a.count(k) ? std::stoi(a[k]) : d; };
  const std::string mode = a.count("mode") ? a["mode"] : "single";
  const int world = num("world", 1);
  const int rank = num("rank", 0);
  const int64_t seq = num("seq", 4096);
  const int64_t heads = num("heads", 8);
  const int64_t dim = num("dim", 64);
  const int iters = num("iters", 3);
  const bool causal = num("causal", 0) != 0;
  const std::string device_name = a.count("device") ? a["device"] : "cpu";
  at::set_num_threads(num("threads", 1));
  const auto index = static_cast<c10::DeviceIndex>(device_name == "cuda" ? rank : -1);
  const at::Device device(device_name == "cuda" ? at::kCUDA : at::kCPU, index);
  ka::AttentionOptions options;
  options.backend = a.count("backend") ? a["backend"] : "native";
  options.is_causal = causal;

  at::manual_seed(0);
  const auto make = [&] { return at::randn({1, seq, heads, dim}).to(device); };
  const at::Tensor q = make();
  const at::Tensor k = make();
  const at::Tensor v = make();
  double per_call = 0;
  kp::CommStats stats;
  if (mode == "single") {
    (void)ka::dispatch_attention(q, k, v, options);  // warm-up
    synchronize(device);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) (void)ka::dispatch_attention(q, k, v, options);
    synchronize(device);
    per_call =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
  } else {
    kp::GroupOptions group_options;
    group_options.store_port = num("port", 29500);
    group_options.rank = rank;
    group_options.world_size = world;
#ifdef KH_WITH_NCCL
    const kp::ProcessGroup group = device.is_cuda() ? kp::make_nccl_group(group_options, rank)
                                                    : kp::ProcessGroup::gloo(group_options);
#else
    const kp::ProcessGroup group = kp::ProcessGroup::gloo(group_options);
#endif
    kp::ContextParallelConfig config;
    config.ring_degree = mode == "ring" ? world : mode == "unified" ? 2 : 1;
    config.ulysses_degree = mode == "ulysses" ? world : mode == "unified" ? world / 2 : 1;
    kp::ContextParallel cp(config, group);
    const at::Tensor ql = cp.shard(q);
    const at::Tensor kl = cp.shard(k);
    const at::Tensor vl = cp.shard(v);
    (void)cp.forward(ql, kl, vl, options);  // warm-up, and every rank is here
    synchronize(device);
    cp.reset_stats();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) (void)cp.forward(ql, kl, vl, options);
    synchronize(device);
    per_call =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
    stats = cp.stats();
  }
  std::printf(
      "{\"rank\": %d, \"world\": %d, \"mode\": \"%s\", \"causal\": %s, \"seconds_per_call\": %.6f, "
      "\"comm_seconds_per_call\": %.6f, \"bytes_sent_per_call\": %lld}\n",
      rank, world, mode.c_str(), causal ? "true" : "false", per_call, stats.comm_seconds / iters,
      static_cast<long long>(stats.bytes_sent / iters));
  return 0;
}
