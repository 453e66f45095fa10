// The C++ side of bench/eviction_bench.py (and of the scale test's shape): builds a synthetic
// cache (tests/support/synthetic_cache.hpp) and evicts it down to a fraction of its size,
// timing the dry-run scan and the eviction. Prints one JSON object.
//   kh_eviction_bench DIR REPOS COMMITS VARIANTS FILES [FRACTION]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "kernelhub/cache/eviction.hpp"
#include "support/synthetic_cache.hpp"

using namespace kernelhub;

namespace {

int run(int argc, char** argv) {
  if (argc < 6) {
    std::cerr << "usage: kh_eviction_bench DIR REPOS COMMITS VARIANTS FILES [FRACTION]\n";
    return 2;
  }
  const cache::KernelCache cache(argv[1]);
  cache::test::SyntheticShape shape{std::stoi(argv[2]), std::stoi(argv[3]), std::stoi(argv[4]),
                                    std::stoi(argv[5])};
  const double fraction = argc > 6 ? std::stod(argv[6]) : 0.5;
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::time_point since) {
    return std::chrono::duration<double>(Clock::now() - since).count();
  };
  auto t = Clock::now();
  const auto made = cache::test::make_synthetic_cache(cache, shape, cache::WallClock::now());
  const double build_s = seconds(t);

  cache::EvictionOptions options;
  options.limits.max_size = static_cast<std::uint64_t>(static_cast<double>(made.bytes) * fraction);
  options.dry_run = true;
  t = Clock::now();
  auto plan = cache::evict(cache, options);
  const double plan_s = seconds(t);
  options.dry_run = false;
  t = Clock::now();
  auto done = cache::evict(cache, options);
  const double evict_s = seconds(t);
  if (!plan || !done) {
    std::cerr << "eviction failed: " << (plan ? done.error().message : plan.error().message)
              << "\n";
    return 1;
  }
  // Files removed: each evicted variant's folder entries (links) and the blobs.
  const std::size_t files =
      done->evicted.size() * static_cast<std::size_t>(shape.files) + done->removed_blobs;
  std::cout << nlohmann::json{{"variants", made.variants},
                              {"blobs", made.blobs},
                              {"bytes", made.bytes},
                              {"max_size", *options.limits.max_size},
                              {"build_s", build_s},
                              {"plan_s", plan_s},
                              {"evict_s", evict_s},
                              {"evicted_variants", done->evicted.size()},
                              {"removed_blobs", done->removed_blobs},
                              {"removed_snapshots", done->removed_snapshots},
                              {"freed_bytes", done->freed_bytes},
                              {"within_bounds", done->within_bounds},
                              {"files_per_s", static_cast<double>(files) / evict_s}}
                   .dump()
            << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a bad number, or the fixture cannot be written
    std::cerr << "kh_eviction_bench: " << e.what() << "\n";
    return 2;
  }
}
