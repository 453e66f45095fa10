// One rank of a context-parallel test (started by parallel_tests or by
// tests/parallel/test_cp_netns.py): forms the Gloo group, runs a scenario, and says by its
// exit code whether what it checked held. Every rank builds the same full-sequence inputs
// from one seed, so each can compute the single-process reference itself.
//
//   kh_cp_worker --rank R --world W --port P [--listen-fd F] [--store-host H] [--bind A]
//                --mode ring|ulysses|unified --scenario S [--backends a,b] [--timeout-ms T]
// Scenarios: equal (guard and model paths vs the reference, causal and not, per backend),
// uneven (shard() and forward refuse), refuse (backend / heads refusals), die / stall (rank
// W-1 exits / stops answering mid-call; the others must fail within the timeout).
// Exit codes: 0 checked and held, 1 a check failed, 2 unexpected error, 42 the dying rank,
// 43 the stalling one.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/randn.h>
#include <torch/nn/module.h>

#include "kernelhub/attention.hpp"
#include "kernelhub/context_parallel.hpp"

namespace ka = kernelhub::attention;
namespace kp = kernelhub::parallel;

namespace {

struct Args {
  std::map<std::string, std::string> values;
  std::string get(const std::string& key, const std::string& fallback = "") const {
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  }
  int num(const std::string& key, int fallback) const {
    auto it = values.find(key);
    return it == values.end() ? fallback : std::stoi(it->second);
  }
};

Args parse(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) args.values[std::string(argv[i]).substr(2)] = argv[i + 1];
  return args;
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// A toy model: two Attention layers, as enable_parallelism finds them in a real one.
struct TwoLayers : torch::nn::Module {
  TwoLayers() {
    first = register_module("first", ka::Attention());
    second = register_module("second", ka::Attention());
  }
  ka::Attention first{nullptr};
  ka::Attention second{nullptr};
};

struct Rank {
  int rank = 0;
  int world = 1;
  std::string mode;
  std::string tag() const { return "[rank " + std::to_string(rank) + "] "; }
};

kp::ContextParallelConfig config_for(const Rank& r) {
  kp::ContextParallelConfig config;
  if (r.mode == "ring") config.ring_degree = r.world;
  if (r.mode == "ulysses") config.ulysses_degree = r.world;
  if (r.mode == "unified") {
    config.ring_degree = 2;
    config.ulysses_degree = r.world / 2;
  }
  return config;
}

ka::AttentionOptions named(const std::string& backend) {
  ka::AttentionOptions options;
  options.backend = backend;
  return options;
}
ka::AttentionOptions native() { return named("native"); }

double max_diff(const at::Tensor& a, const at::Tensor& b) {
  return at::abs(a.to(at::kFloat) - b.to(at::kFloat)).max().item<double>();
}

struct Qkv {
  at::Tensor q, k, v;
};
Qkv full_inputs(int64_t seq, int64_t heads, uint64_t seed) {
  at::manual_seed(seed);
  return {at::randn({2, seq, heads, 16}), at::randn({2, seq, heads, 16}),
          at::randn({2, seq, heads, 16})};
}

int scenario_equal(const Rank& r, kp::ContextParallel& cp,
                   const std::vector<std::string>& backends) {
  bool ok = true;
  const int64_t seq = 8L * r.world;
  const Qkv full = full_inputs(seq, 4, 1234);
  const at::Tensor q = cp.shard(full.q);
  const at::Tensor k = cp.shard(full.k);
  const at::Tensor v = cp.shard(full.v);
  for (const auto& backend : backends) {
    for (const bool causal : {false, true}) {
      ka::AttentionOptions options;
      options.backend = backend;
      options.is_causal = causal;
      const at::Tensor reference = ka::dispatch_attention(full.q, full.k, full.v, options);
      // The guard path: a plain dispatch_attention call on this rank's slices.
      at::Tensor local;
      {
        ka::ParallelismGuard guard(std::shared_ptr<kp::ContextParallel>(&cp, [](auto*) {}));
        local = ka::dispatch_attention(q, k, v, options);
      }
      const double slice_err = max_diff(local, cp.shard(reference));
      const double gathered_err = max_diff(cp.gather(local), reference);
      // The model path: a layer with its own backend, run through enable_parallelism.
      TwoLayers model;
      model.second->set_backend(backend);
      kp::enable_parallelism(model, std::shared_ptr<kp::ContextParallel>(&cp, [](auto*) {}));
      ka::AttentionOptions layer_options;
      layer_options.is_causal = causal;
      const at::Tensor via_model = model.second->forward(q, k, v, layer_options);
      const double model_err = max_diff(via_model, cp.shard(reference));
      kp::disable_parallelism(model);
      const bool pass = slice_err < 1e-5 && gathered_err < 1e-5 && model_err < 1e-5;
      std::cout << r.tag() << r.mode << " " << backend << (causal ? " causal" : "") << ": slice "
                << slice_err << ", gathered " << gathered_err << ", model " << model_err
                << (pass ? " ok" : " MISMATCH") << std::endl;
      ok = ok && pass;
    }
  }
  return ok ? 0 : 1;
}

int scenario_uneven(const Rank& r, kp::ContextParallel& cp) {
  bool ok = true;
  const Qkv full = full_inputs(8L * r.world + 1, 4, 7);
  try {
    (void)cp.shard(full.q);
    std::cout << r.tag() << "shard() accepted an uneven sequence" << std::endl;
    ok = false;
  } catch (const kp::UnevenShards& e) {
    std::cout << r.tag() << "shard refused: " << e.what() << std::endl;
  }
  // The last rank holds one token more: every rank must refuse, none may hang.
  const int64_t local = r.rank == r.world - 1 ? 9 : 8;
  const int64_t start = 8L * r.rank;
  const at::Tensor q = full.q.narrow(1, start, local);
  const at::Tensor k = full.k.narrow(1, start, local);
  const at::Tensor v = full.v.narrow(1, start, local);
  try {
    (void)cp.forward(q, k, v, native());
    std::cout << r.tag() << "forward accepted uneven slices" << std::endl;
    ok = false;
  } catch (const kp::UnevenShards& e) {
    const std::string message = e.what();
    const bool names = message.find("sequence lengths per rank") != std::string::npos &&
                       message.find("refused, not padded") != std::string::npos;
    std::cout << r.tag() << "forward refused: " << message << std::endl;
    ok = ok && names;
  }
  return ok ? 0 : 1;
}

int scenario_refuse(const Rank& r, kp::ContextParallel& cp) {
  bool ok = true;
  const Qkv full = full_inputs(8L * r.world, 3, 9);  // 3 heads: not a multiple of 2 or 4
  const at::Tensor q = cp.shard(full.q);
  const at::Tensor k = cp.shard(full.k);
  const at::Tensor v = cp.shard(full.v);
  const bool ring = cp.config().ring_degree > 1;
  try {
    (void)cp.forward(q, k, v, named(ring ? "xformers" : "native"));
    std::cout << r.tag() << "not refused" << std::endl;
    ok = false;
  } catch (const ka::UnsupportedArgument& e) {
    // Ring: xformers has no lse. Nothing was sent, so nothing waits for this rank.
    std::cout << r.tag() << "refused: " << e.what() << std::endl;
    ok = ring && std::string(e.what()).find("xformers does not") != std::string::npos;
  } catch (const ka::InvalidInput& e) {
    // Ulysses: 3 heads cannot be split over the group.
    std::cout << r.tag() << "refused: " << e.what() << std::endl;
    ok = !ring && std::string(e.what()).find("multiples of ulysses_degree") != std::string::npos;
  }
  return ok ? 0 : 1;
}

// die: rank W-1 exits mid-call (the others see its connections close). stall: it stops
// answering instead, for longer than the timeout (the others must give up at the timeout).
int scenario_die(const Rank& r, kp::ContextParallel& cp, int timeout_ms, bool stall) {
  const int64_t seq = 256L * r.world;
  const Qkv full = full_inputs(seq, 4, 11);
  const at::Tensor q = cp.shard(full.q);
  const at::Tensor k = cp.shard(full.k);
  const at::Tensor v = cp.shard(full.v);
  (void)cp.forward(q, k, v, native());  // a first call that everyone makes
  if (r.rank == r.world - 1) {
    // The others are inside their second call (waiting on this rank) when it goes.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (stall) {
      std::cout << r.tag() << "stalling mid-call" << std::endl;
      std::this_thread::sleep_for(std::chrono::milliseconds(2 * timeout_ms + 3000));
      std::_Exit(43);
    }
    std::cout << r.tag() << "exiting mid-call" << std::endl;
    std::_Exit(42);
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)cp.forward(q, k, v, native());
    std::cout << r.tag() << "the call succeeded without rank " << r.world - 1 << std::endl;
    return 1;
  } catch (const kp::CommunicationError& e) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double bound = 2.0 * timeout_ms / 1000.0 + 2.0;
    std::cout << r.tag() << "failed after " << seconds << " s (bound " << bound
              << " s): " << e.what() << std::endl;
    // The group is broken; its destructor could wait on the dead peer, so leave now.
    std::cout.flush();
    std::_Exit(seconds < bound ? 0 : 1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  Rank r;
  r.rank = args.num("rank", 0);
  r.world = args.num("world", 1);
  r.mode = args.get("mode", "ring");
  const std::string scenario = args.get("scenario", "equal");
  const int timeout_ms = args.num("timeout-ms", 20000);
  // Ranks share the machine's cores: one intra-op thread each.
  at::set_num_threads(1);
  try {
    kp::GroupOptions group_options;
    group_options.store_host = args.get("store-host", "127.0.0.1");
    group_options.store_port = args.num("port", 29500);
    group_options.store_listen_fd = args.num("listen-fd", -1);
    group_options.bind_address = args.get("bind");
    group_options.rank = r.rank;
    group_options.world_size = r.world;
    group_options.timeout = std::chrono::milliseconds(timeout_ms);
    const kp::ProcessGroup group = kp::ProcessGroup::gloo(group_options);
    kp::ContextParallelConfig config = config_for(r);
    // die, stall: fail inside the ring / all-to-all, not in the shape check.
    config.check_shards = scenario != "die" && scenario != "stall";
    kp::ContextParallel cp(config, group);
    int code = 2;
    if (scenario == "equal") code = scenario_equal(r, cp, split(args.get("backends", "native")));
    if (scenario == "uneven") code = scenario_uneven(r, cp);
    if (scenario == "refuse") code = scenario_refuse(r, cp);
    if (scenario == "die" || scenario == "stall") {
      code = scenario_die(r, cp, timeout_ms, scenario == "stall");
    }
    const kp::CommStats stats = cp.stats();
    std::cout << r.tag() << "calls " << stats.calls << ", comm " << stats.comm_seconds
              << " s, sent " << stats.bytes_sent << " B" << std::endl;
    return code;
  } catch (const std::exception& e) {
    std::cout << r.tag() << "unexpected error: " << e.what() << std::endl;
    return 2;
  }
}
