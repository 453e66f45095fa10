// Eviction (cache/eviction.hpp): least recently used variants first, pins kept, blobs another
// snapshot links kept, refs gone before their snapshot, repos a fetch holds left alone, and the
// usage markers and pins documents it reads.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>

#include "cache/cache_test_util.hpp"
#include "kernelhub/cache/cache_usage.hpp"
#include "kernelhub/cache/eviction.hpp"
#include "kernelhub/cache/maintenance.hpp"
#include "kernelhub/cache/pinning.hpp"
#include "kernelhub/cache/pins.hpp"
#include "kernelhub/cache/usage.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::cache;
namespace fs = std::filesystem;
using std::chrono::hours;

namespace {

const trust::RepoId kRelu{"kernels-community", "relu"};
const trust::RepoId kNorm{"kernels-community", "rmsnorm"};
const std::string kC1 = "1111111111111111111111111111111111111111";
const std::string kC2 = "2222222222222222222222222222222222222222";
const WallClock::time_point kNow = WallClock::time_point(std::chrono::seconds(1'800'000'000));

std::string bytes(std::size_t n, char c) {
  std::string out(n, c);  // not {n, c}: that would be two characters
  return out;
}

// relu@C1 {cpu (1000 B + shared 100 B), cuda (2000 B + shared)}, rmsnorm@C2 {cpu 4000 B}.
struct Fixture {
  testing::TempDir tmp;
  KernelCache cache{tmp.path() / "cache"};
  Fixture() {
    REQUIRE(test::publish(cache, kRelu, kC1,
                          {{"build/cpu/_ops.so", bytes(1000, 'a')},
                           {"build/cpu/__init__.py", bytes(100, 's')},
                           {"build/cuda/_ops.so", bytes(2000, 'b')},
                           {"build/cuda/__init__.py", bytes(100, 's')}},
                          "v1"));
    REQUIRE(test::publish(cache, kNorm, kC2, {{"build/cpu/_ops.so", bytes(4000, 'c')}}, "v1"));
    REQUIRE(cache.write_version_state(kRelu, {1, kC1, std::nullopt}));
    use(kRelu, kC1, "cpu", hours(3));
    use(kRelu, kC1, "cuda", hours(1));
    use(kNorm, kC2, "cpu", hours(2));
  }
  void use(const trust::RepoId& repo, const std::string& commit, const std::string& variant,
           hours ago) {
    REQUIRE(record_use(cache, {repo, commit, variant}, kNow - ago));
  }
  EvictionOptions options(std::uint64_t max_size) const {
    EvictionOptions o;
    o.limits.max_size = max_size;
    o.now = kNow;
    o.space = [](const fs::path&) -> Result<FileSystemSpace> {
      return FileSystemSpace{1u << 30, 1u << 29};
    };
    return o;
  }
  bool has_variant(const trust::RepoId& repo, const std::string& commit,
                   const std::string& v) const {
    return fs::is_directory(cache.snapshot_dir(repo, commit) / "build" / v);
  }
};

}  // namespace

TEST_CASE("eviction removes the least recently used variant first and keeps shared blobs",
          "[cache][eviction]") {
  Fixture f;
  // 7100 bytes cached; a bound of 6500 needs one variant to go: relu/cpu is the oldest.
  auto report = evict(f.cache, f.options(6500));
  REQUIRE(report);
  CHECK(report->cache_bytes == 7100);
  REQUIRE(report->evicted.size() == 1);
  CHECK(report->evicted[0].ref == VariantRef{kRelu, kC1, "cpu"});
  CHECK(report->evicted[0].reason.find("max_size") != std::string::npos);
  CHECK(report->within_bounds);
  CHECK_FALSE(f.has_variant(kRelu, kC1, "cpu"));
  CHECK(f.has_variant(kRelu, kC1, "cuda"));
  // Only cpu's own blob went: __init__.py is still linked by cuda.
  CHECK(report->removed_blobs == 1);
  CHECK(report->freed_bytes == 1000);
  CHECK(fs::exists(f.cache.blobs_dir(kRelu) / test::etag_of(bytes(100, 's'))));
  CHECK_FALSE(fs::exists(f.cache.usage_marker_path(kRelu, kC1, "cpu")));
  CHECK(f.cache.read_ref(kRelu, "v1") == kC1);  // the snapshot keeps its other variant
  CHECK(verify_cache(f.cache)->corrupt.empty());
}

TEST_CASE("a snapshot left without variants goes with its refs, the version state stays",
          "[cache][eviction]") {
  Fixture f;
  f.use(kNorm, kC2, "cpu", hours(0));
  auto report = evict(f.cache, f.options(4000));  // relu (both variants) must go
  REQUIRE(report);
  CHECK(report->evicted.size() == 2);
  CHECK(report->removed_snapshots == 1);
  CHECK(report->freed_bytes == 3100);
  CHECK_FALSE(fs::exists(f.cache.snapshot_dir(kRelu, kC1)));
  CHECK_FALSE(f.cache.read_ref(kRelu, "v1"));
  CHECK_FALSE(fs::exists(f.cache.repo_dir(kRelu) / "refs" / "v1"));
  const auto state = f.cache.read_version_state(kRelu, 1);
  REQUIRE(state);
  CHECK(state->accepted == kC1);
  CHECK(fs::is_empty(f.cache.trash_dir(kRelu)));
  CHECK(f.has_variant(kNorm, kC2, "cpu"));
}

TEST_CASE("pinned variants are never evicted, the bound is then reported as not met",
          "[cache][eviction][pins]") {
  Fixture f;
  REQUIRE(add_pin(f.cache, kRelu, {kC1, {"cpu"}, "test", "uid 0", 0}));
  auto report = evict(f.cache, f.options(6500));
  REQUIRE(report);
  REQUIRE(report->evicted.size() == 1);
  CHECK(report->evicted[0].ref == VariantRef{kNorm, kC2, "cpu"});  // the next oldest
  CHECK(report->pinned_bytes == 1100);
  CHECK(f.has_variant(kRelu, kC1, "cpu"));
  // A whole-commit pin keeps both of relu's variants, even under a bound nothing else meets.
  REQUIRE(add_pin(f.cache, kRelu, {kC1, {}, "test", "uid 0", 0}));
  auto tight = evict(f.cache, f.options(100));
  REQUIRE(tight);
  CHECK(tight->evicted.empty());
  CHECK_FALSE(tight->within_bounds);
  CHECK(f.has_variant(kRelu, kC1, "cpu"));
  CHECK(f.has_variant(kRelu, kC1, "cuda"));
}

TEST_CASE("max_unused_age evicts old variants even within the size bound", "[cache][eviction]") {
  Fixture f;
  auto options = f.options(1u << 30);
  options.limits.max_unused_age = std::chrono::seconds(hours(2) + std::chrono::minutes(30));
  auto report = evict(f.cache, options);
  REQUIRE(report);
  REQUIRE(report->evicted.size() == 1);
  CHECK(report->evicted[0].ref == VariantRef{kRelu, kC1, "cpu"});
  CHECK(report->evicted[0].reason.find("unused for") != std::string::npos);
}

TEST_CASE("min_free and a download's reserve evict until the file system has room",
          "[cache][eviction]") {
  Fixture f;
  auto options = f.options(1u << 30);
  options.limits.max_size.reset();
  // A 1 MB disk with 500 bytes free: min_free 2000 needs relu/cpu (1000) and rmsnorm (4000)
  // gone in LRU order until free >= 2000.
  options.space = [](const fs::path&) -> Result<FileSystemSpace> {
    return FileSystemSpace{1'000'000, 500};
  };
  options.limits.min_free_bytes = 2000;
  auto report = evict(f.cache, options);
  REQUIRE(report);
  REQUIRE(report->evicted.size() == 2);
  CHECK(report->evicted[0].ref == VariantRef{kRelu, kC1, "cpu"});
  CHECK(report->evicted[1].ref == VariantRef{kNorm, kC2, "cpu"});
  CHECK(report->evicted[1].reason.find("min_free") != std::string::npos);

  Fixture g;
  auto reserve = g.options(1u << 30);
  reserve.limits.max_size.reset();
  reserve.space = options.space;
  reserve.reserve_bytes = 1000;  // 500 free, a 1000-byte download: one variant is enough
  auto made_room = evict(g.cache, reserve);
  REQUIRE(made_room);
  CHECK(made_room->evicted.size() == 1);

  Fixture h;
  auto percent = h.options(1u << 30);
  percent.limits.max_size.reset();
  percent.space = [](const fs::path&) -> Result<FileSystemSpace> {
    return FileSystemSpace{100'000, 4000};
  };
  percent.limits.min_free_percent = 5.0;  // 5000 of 100000
  auto by_percent = evict(h.cache, percent);
  REQUIRE(by_percent);
  CHECK(by_percent->evicted.size() == 1);
}

TEST_CASE("a repo a fetch holds is left alone, and dry_run removes nothing", "[cache][eviction]") {
  Fixture f;
  {
    auto held = f.cache.hold_repo(kRelu);
    REQUIRE(held);
    auto report = evict(f.cache, f.options(100));
    REQUIRE(report);
    REQUIRE(report->skipped.size() == 1);
    CHECK(report->skipped[0].find("kernels-community/relu") != std::string::npos);
    CHECK_FALSE(report->within_bounds);
    CHECK(f.has_variant(kRelu, kC1, "cpu"));
    CHECK_FALSE(f.has_variant(kNorm, kC2, "cpu"));  // the other repo was not held
  }
  Fixture g;
  auto dry = g.options(100);
  dry.dry_run = true;
  auto report = evict(g.cache, dry);
  REQUIRE(report);
  CHECK(report->evicted.size() == 3);
  CHECK(report->freed_bytes == 7100);
  CHECK(g.has_variant(kRelu, kC1, "cpu"));
  CHECK(g.has_variant(kNorm, kC2, "cpu"));
}

TEST_CASE("a variant used after it was chosen stays", "[cache][eviction]") {
  Fixture f;
  // 2200 bytes: relu/cpu (3 h) and rmsnorm/cpu (2 h) are chosen. relu goes first (repos go
  // in order); while it goes, rmsnorm is used again, so its removal is skipped.
  auto options = f.options(2200);
  int removals = 0;
  options.on_remove = [&](const VariantRef& ref) {
    ++removals;
    if (ref.repo == kRelu) REQUIRE(record_use(f.cache, {kNorm, kC2, "cpu"}, kNow));
  };
  auto report = evict(f.cache, options);
  REQUIRE(report);
  CHECK(removals == 1);  // rmsnorm's removal never started
  REQUIRE(report->evicted.size() == 1);
  CHECK(report->evicted[0].ref == VariantRef{kRelu, kC1, "cpu"});
  CHECK(f.has_variant(kNorm, kC2, "cpu"));
  CHECK(f.has_variant(kRelu, kC1, "cuda"));
}

TEST_CASE("gc removes unreferenced snapshots but not pinned ones, and empties the trash",
          "[cache][eviction][gc]") {
  Fixture f;
  REQUIRE(test::publish(f.cache, kRelu, kC2, {{"build/cpu/_ops.so", bytes(300, 'z')}}, "v2"));
  fs::remove(f.cache.repo_dir(kRelu) / "refs" / "v2");  // C2 is now unreferenced
  fs::create_directories(f.cache.trash_dir(kRelu) / "left-by-a-crash");
  auto first = collect_garbage(f.cache);
  REQUIRE(first);
  CHECK(first->removed_snapshots == 1);
  CHECK_FALSE(fs::exists(f.cache.snapshot_dir(kRelu, kC2)));
  CHECK(fs::is_empty(f.cache.trash_dir(kRelu)));

  REQUIRE(test::publish(f.cache, kRelu, kC2, {{"build/cpu/_ops.so", bytes(300, 'z')}}, "v2"));
  fs::remove(f.cache.repo_dir(kRelu) / "refs" / "v2");
  REQUIRE(add_pin(f.cache, kRelu, {kC2, {}, "kernels.lock", "uid 0", 0}));
  auto second = collect_garbage(f.cache);
  REQUIRE(second);
  CHECK(second->removed_snapshots == 0);
  CHECK(fs::exists(f.cache.snapshot_dir(kRelu, kC2)));
}

TEST_CASE("a repo whose pins cannot be read keeps everything", "[cache][eviction][pins]") {
  Fixture f;
  std::ofstream(f.cache.pins_path(kRelu)) << "{not json";
  auto report = evict(f.cache, f.options(100));
  REQUIRE(report);
  REQUIRE(report->skipped.size() == 1);
  CHECK(report->skipped[0].find("pins") != std::string::npos);
  CHECK(f.has_variant(kRelu, kC1, "cpu"));
  // unpin repairs it.
  REQUIRE(remove_pins(f.cache, kRelu, std::nullopt));
  CHECK(read_pins(f.cache, kRelu));
}

TEST_CASE("usage markers: recorded times, the resolution, and the folder-time fallback",
          "[cache][usage]") {
  Fixture f;
  const VariantRef ref{kRelu, kC1, "cpu"};
  CHECK(recorded_use(f.cache, ref) == kNow - hours(3));
  REQUIRE(record_use(f.cache, ref, kNow - hours(3) + std::chrono::seconds(30)));
  CHECK(recorded_use(f.cache, ref) == kNow - hours(3));  // within the resolution: unchanged
  REQUIRE(record_use(f.cache, ref, kNow));
  CHECK(recorded_use(f.cache, ref) == kNow);
  CHECK_FALSE(record_use(f.cache, {kRelu, "not-a-commit", "cpu"}, kNow));
  CHECK_FALSE(record_use(f.cache, {kRelu, kC1, "../escape"}, kNow));
  fs::remove(f.cache.usage_marker_path(kRelu, kC1, "cpu"));
  const auto scanned = scan_repo_usage(f.cache, kRelu);
  REQUIRE(scanned.snapshots.size() == 1);
  CHECK_FALSE(scanned.snapshots[0].variants[0].recorded);
  CHECK(scanned.snapshots[0].variants[0].size_bytes == 1100);
}

TEST_CASE("pins documents: merge, bounds and refusals", "[cache][pins]") {
  Fixture f;
  REQUIRE(add_pin(f.cache, kRelu, {kC1, {"cpu"}, "a", "uid 1", 1}));
  auto merged = add_pin(f.cache, kRelu, {kC1, {"cuda", "cpu"}, "b", "uid 2", 2});
  REQUIRE(merged);
  REQUIRE(merged->size() == 1);
  CHECK((*merged)[0].variants == std::vector<std::string>{"cpu", "cuda"});
  auto every = add_pin(f.cache, kRelu, {kC1, {}, "c", "uid 3", 3});
  REQUIRE(every);
  CHECK((*every)[0].variants.empty());
  CHECK(pins_listing_json(f.cache).size() == 1);
  CHECK(remove_pins(f.cache, kRelu, kC1).value() == 1);
  CHECK(pins_listing_json(f.cache).empty());

  CHECK_FALSE(add_pin(f.cache, kRelu, {"short", {}, "", "", 0}));
  CHECK_FALSE(parse_pins(R"({"pins": [{"commit": "xyz"}]})"));
  CHECK_FALSE(parse_pins(R"({"pins": [{"commit": ")" + kC1 + R"(", "variants": ["a/b"]}]})"));
  CHECK_FALSE(parse_pins(R"({"pins": {}})"));
  CHECK_FALSE(parse_pins(std::string(2u << 20, ' ')));
  std::string deep = R"({"pins": [)" + std::string(20, '[') + std::string(20, ']') + "]}";
  CHECK_FALSE(parse_pins(deep));
  auto parsed = parse_pins(R"({"pins": [{"commit": ")" + kC1 + R"(", "future": 1}]})");
  REQUIRE(parsed);
  CHECK((*parsed)[0].variants.empty());
}

TEST_CASE("a recent_grace keeps variants used within it", "[cache][eviction]") {
  Fixture f;
  auto options = f.options(100);
  options.recent_grace = std::chrono::seconds(hours(2) + std::chrono::minutes(30));
  auto report = evict(f.cache, options);
  REQUIRE(report);
  REQUIRE(report->evicted.size() == 1);  // only relu/cpu (3 h) is older than the grace
  CHECK(report->evicted[0].ref == VariantRef{kRelu, kC1, "cpu"});
  CHECK_FALSE(report->within_bounds);
}
