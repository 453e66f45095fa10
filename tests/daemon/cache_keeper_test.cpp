// daemon::CacheKeeper on its own, over a synthetic cache: hand-outs recorded from many
// threads while passes evict (the TSan suite runs it), uses written only when a batch is,
// and make_room evicting for a download only when [cache] bounds exist.
#include <catch2/catch.hpp>

#include <atomic>
#include <shared_mutex>
#include <thread>

#include "kernelhub/cache/cache_usage.hpp"
#include "kernelhub/daemon/cache_keeper.hpp"
#include "support/process.hpp"
#include "support/synthetic_cache.hpp"

using namespace kernelhub;
using namespace kernelhub::daemon;

namespace {

struct Fixture {
  testing::TempDir tmp;
  cache::KernelCache cache{tmp.path() / "cache"};
  std::shared_mutex maintenance;
  AtomicCounters counters;
  trust::CacheSettings settings;
  cache::test::SyntheticCache made;
  Fixture() {
    made = cache::test::make_synthetic_cache(cache, {2, 2, 2, 2},
                                             cache::WallClock::now() - std::chrono::hours(2));
    settings.in_use_grace = std::chrono::seconds(0);
  }
  fetch::Manifest manifest_of(int repo, int commit) const {
    const trust::RepoId id{"kernels-community", "synthetic-" + std::to_string(repo)};
    fetch::Manifest m;
    m.repo = id;
    m.commit = trust::sha256_hex(id.str() + "@" + std::to_string(commit)).substr(0, 40);
    m.variants = {"torch20-cxx11-cpu-x86_64-linux", "torch21-cxx11-cpu-x86_64-linux"};
    return m;
  }
};

}  // namespace

TEST_CASE("the keeper writes recorded uses only when a batch is written", "[daemon][keeper]") {
  Fixture f;
  CacheKeeper keeper(
      f.cache.root(), f.maintenance, f.counters, [&] { return f.settings; }, true);
  const auto m = f.manifest_of(0, 0);
  const cache::VariantRef ref{m.repo, m.commit, m.variants[0]};
  const auto before = cache::recorded_use(f.cache, ref);
  REQUIRE(before);
  for (int i = 0; i < 100; ++i) keeper.record_use(m);
  CHECK(cache::recorded_use(f.cache, ref) == before);  // nothing written per hand-out
  keeper.flush_usage();
  const auto after = cache::recorded_use(f.cache, ref);
  REQUIRE(after);
  CHECK(*after > *before);

  CacheKeeper off(
      f.cache.root(), f.maintenance, f.counters, [&] { return f.settings; }, false);
  const cache::VariantRef other{m.repo, m.commit, m.variants[1]};
  const auto untouched = cache::recorded_use(f.cache, other);
  off.record_use(f.manifest_of(0, 0));
  off.flush_usage();
  CHECK(cache::recorded_use(f.cache, other) == untouched);
}

TEST_CASE("hand-outs recorded from many threads while passes evict", "[daemon][keeper]") {
  Fixture f;
  f.settings.max_size = f.made.bytes / 2;
  CacheKeeper keeper(
      f.cache.root(), f.maintenance, f.counters, [&] { return f.settings; }, true);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      while (!stop.load()) keeper.record_use(f.manifest_of(t % 2, t % 2));
    });
  }
  for (int i = 0; i < 5; ++i) REQUIRE(keeper.pass("test"));
  stop = true;
  for (auto& t : threads) t.join();
  CHECK(f.counters.evictions.load() > 0);
  CHECK(f.counters.cache_bytes.load() <= f.made.bytes / 2);
  // The variants the threads kept using are the ones left.
  for (int r = 0; r < 2; ++r) {
    const auto m = f.manifest_of(r, r);
    CHECK(std::filesystem::is_directory(f.cache.snapshot_dir(m.repo, m.commit) / "build" /
                                        m.variants[0]));
  }
}

TEST_CASE("make_room evicts only under [cache] bounds, and only when the download does not fit",
          "[daemon][keeper]") {
  Fixture f;
  CacheKeeper keeper(
      f.cache.root(), f.maintenance, f.counters, [&] { return f.settings; }, true);
  f.settings.in_use_grace.reset();
  CHECK(keeper.make_room(1));  // unbounded: nothing to do
  f.settings.in_use_grace = std::chrono::seconds(0);
  f.settings.max_size = 1ULL << 40;
  CHECK(keeper.make_room(1));  // fits: nothing evicted
  CHECK(f.counters.evictions.load() == 0);
  // The disk said ENOSPC: eviction frees what the download needs, whatever statvfs says.
  CHECK(keeper.make_room(2500, /*disk_said_full=*/true));
  CHECK(f.counters.evictions.load() == 8);  // 200-byte variants: every one goes
}
