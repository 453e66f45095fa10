// Slow and hostile upstreams: a trickle under the throughput floor (also one spread over
// many short connections), a body that never ends, a stall after the headers (each on an API
// reply and on a file body), and a Retry-After of an hour. Each fails with a typed error within its
// configured bound, names the variable that raises the limit, and publishes nothing. Every case
// first proves its fault happened.
#include <catch2/catch.hpp>

#include <chrono>

#include "hub/fetch_fixture.hpp"
#include "kernelhub/hub/transfer_watch.hpp"
#include "kernelhub/trust/digest.hpp"
#include "support/fault_hub/fault_hub.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

bool has_any_file(const fs::path& dir) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory()) return true;
  }
  return false;
}

void check_nothing_published(const FetchFixture& fx) {
  const auto repo = fx.cache_root / "kernels--kernels-community--demo-fetch";
  CHECK_FALSE(fs::exists(repo / "snapshots" / fx.commit));
  CHECK_FALSE(fs::exists(repo / "refs" / "v1"));
  CHECK_FALSE(has_any_file(repo / "blobs"));  // no committed blob, no temp left behind
}

struct Timed {
  Result<hub::FetchResult> result;
  double seconds;
};

// Fetches with the fixture's environment plus `vars`; the config's retries are `retries`.
Timed timed_fetch(FetchFixture& fx, std::initializer_list<std::pair<const char*, const char*>> vars,
                  int retries) {
  auto env = fx.env();
  for (const auto& [name, value] : vars) env.set(name, value);
  auto config = hub::HubConfig::from(env);
  config.max_retries = retries;
  const auto start = Clock::now();
  auto result = fx.fetch(FetchFixture::request(), config);
  return {std::move(result), std::chrono::duration<double>(Clock::now() - start).count()};
}

}  // namespace

TEST_CASE("the throughput floor trips on a trickle and never on a steady link above it") {
  hub::TransferWatch watch;
  watch.stall = milliseconds(10'000);
  watch.min_bytes_per_second = 1024;
  watch.window = milliseconds(30'000);
  const auto t0 = Clock::now();
  const auto run = [&](curl_off_t bytes_per_second, int seconds) {
    watch.reset();
    watch.samples.assign(1, {t0, 0});
    for (int ms = 0; ms <= seconds * 1000; ms += 250) {
      const auto trip = watch.check(t0 + milliseconds(ms), bytes_per_second * ms / 1000);
      if (trip != hub::TransferWatch::Trip::none) return std::pair{trip, ms};
    }
    return std::pair{hub::TransferWatch::Trip::none, 0};
  };
  // 1100 B/s for 10 minutes: above the floor, never too slow.
  CHECK(run(1100, 600).first == hub::TransferWatch::Trip::none);
  // 1 B/s: too slow once a whole window has passed, not before.
  const auto [trip, at_ms] = run(1, 120);
  CHECK(trip == hub::TransferWatch::Trip::slow);
  CHECK(at_ms >= 30'000);
  CHECK(at_ms <= 31'000);
  // Eight files sharing a 4 KiB/s link move 512 B/s each: the floor is for all of them.
  std::uint64_t all_files = 0;
  watch.aggregate = &all_files;
  watch.reset();
  watch.samples.assign(1, {t0, 0});
  bool tripped = false;
  for (int ms = 0; ms <= 120'000 && !tripped; ms += 250) {
    all_files = 4096ULL * static_cast<std::uint64_t>(ms) / 1000;
    tripped =
        watch.check(t0 + milliseconds(ms), 512LL * ms / 1000) != hub::TransferWatch::Trip::none;
  }
  CHECK_FALSE(tripped);
  watch.aggregate = nullptr;
  // A deadline ends even a fast transfer.
  watch.reset();
  watch.deadline = t0 + milliseconds(5000);
  CHECK(watch.check(t0 + milliseconds(5000), 1 << 30) == hub::TransferWatch::Trip::deadline);
}

TEST_CASE("the throughput floor's window spans the attempts of a transfer, not their waits") {
  hub::TransferWatch watch;
  watch.stall = milliseconds(10'000);
  watch.min_bytes_per_second = 1024;
  watch.window = milliseconds(30'000);
  watch.reset();
  auto t = Clock::now();
  watch.samples.assign(1, {t, 0});
  // Attempts of 10 s that each move 100 bytes and then break: none is a whole window, but
  // the transfer is too slow once 30 s of them have passed.
  hub::TransferWatch::Trip trip = hub::TransferWatch::Trip::none;
  int attempts = 0;
  for (; attempts < 10 && trip == hub::TransferWatch::Trip::none; ++attempts) {
    if (attempts > 0) watch.next_attempt();
    const auto start = t;
    for (int ms = 0; ms <= 10'000 && trip == hub::TransferWatch::Trip::none; ms += 250) {
      t = start + milliseconds(ms);
      trip = watch.check(t, 100LL * ms / 10'000);
    }
  }
  CHECK(trip == hub::TransferWatch::Trip::slow);
  CHECK(attempts == 3);
  CHECK(watch.earlier_attempts == 200);  // what the broken attempts moved still counts

  // A wait between attempts (a Retry-After) is not slowness: the window is shifted past it.
  watch.reset();
  const auto t0 = Clock::now() - milliseconds(80'000);
  watch.samples.assign(1, {t0, 0});
  CHECK(watch.check(t0 + milliseconds(20'000), 40'000) == hub::TransferWatch::Trip::none);
  watch.next_attempt();  // a minute after that check
  CHECK(watch.samples.front().first >= t0 + milliseconds(59'000));
  // Unshifted, the window would hold the minute's wait and 100 bytes: too slow at once.
  CHECK(watch.check(Clock::now() + milliseconds(100), 100) == hub::TransferWatch::Trip::none);
}

TEST_CASE("defaults and variables of the slow-retrieval limits") {
  util::Environment env;
  auto config = hub::HubConfig::from(env);
  CHECK(config.min_bytes_per_second == 1024);
  CHECK(config.min_speed_window == milliseconds(30'000));
  CHECK(config.api_deadline == milliseconds(120'000));
  CHECK(config.max_retry_wait == 60);
  CHECK(config.max_retry_wait_total == 120);
  // A 100 MiB file keeps 600 s plus its time at 1 KiB/s (about 28 h) before its deadline.
  CHECK(config.file_deadline(100u << 20) == milliseconds(600'000 + 102'400'000));
  env.set("KERNELHUB_MIN_BYTES_PER_SECOND", "0");
  env.set("KERNELHUB_MIN_SPEED_WINDOW", "2.5");
  env.set("KERNELHUB_API_DEADLINE", "7");
  env.set("KERNELHUB_DOWNLOAD_DEADLINE", "9");
  env.set("KERNELHUB_MAX_RETRY_WAIT", "5");
  env.set("KERNELHUB_MAX_RETRY_WAIT_TOTAL", "11");
  config = hub::HubConfig::from(env);
  CHECK(config.min_bytes_per_second == 0);
  CHECK(config.min_speed_window == milliseconds(2500));
  CHECK(config.api_deadline == milliseconds(7000));
  CHECK(config.file_deadline(100u << 20) == milliseconds(9000));  // no floor: the base only
  CHECK(config.max_retry_wait == 5);
  CHECK(config.max_retry_wait_total == 11);
}

TEST_CASE("a 1 byte/s trickle on an API reply fails with timeout after the floor's window") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.trickle_bytes_per_second = 1;
  plan.scope = "api";
  plan.path_filter = "/api/";
  fx.server->set_faults(plan);
  // Floor 64 B/s over 1 s: one window, and no retry (its window would span the first try).
  auto [result, seconds] = timed_fetch(
      fx, {{"KERNELHUB_MIN_BYTES_PER_SECOND", "64"}, {"KERNELHUB_MIN_SPEED_WINDOW", "1"}}, 3);
  CHECK(fx.server->paced_bytes() >= 1);  // the trickle ran
  CHECK(fx.server->count("GET", "/api/") == 1);
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::timeout);
  CHECK_THAT(result.error().message, Catch::Contains("KERNELHUB_MIN_BYTES_PER_SECOND"));
  CHECK(seconds >= 1.0);
  CHECK(seconds < 2.0);
  check_nothing_published(fx);
}

TEST_CASE("a 1 byte/s trickle on a file body fails with timeout after the floor's window") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.trickle_bytes_per_second = 1;
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  auto [result, seconds] = timed_fetch(
      fx, {{"KERNELHUB_MIN_BYTES_PER_SECOND", "64"}, {"KERNELHUB_MIN_SPEED_WINDOW", "1"}}, 3);
  CHECK(fx.server->paced_bytes() >= 1);
  CHECK(fx.server->count("GET", "/lfs-objects/") == 1);  // the floor is final: no retry
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::timeout);
  CHECK_THAT(result.error().message, Catch::Contains("too slow") &&
                                         Catch::Contains("KERNELHUB_MIN_BYTES_PER_SECOND") &&
                                         Catch::Contains("KERNELHUB_MIN_SPEED_WINDOW"));
  CHECK(seconds >= 1.0);  // one window
  CHECK(seconds < 2.0);
  check_nothing_published(fx);
}

TEST_CASE("an upstream that drops each connection after a few slow bytes cannot reset the floor") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.trickle_bytes_per_second = 16;  // a quarter of the floor
  plan.reset_after_bytes = 8;          // half a second per connection, then dropped
  plan.reset_times = 1000;
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  auto [result, seconds] = timed_fetch(
      fx, {{"KERNELHUB_MIN_BYTES_PER_SECOND", "64"}, {"KERNELHUB_MIN_SPEED_WINDOW", "1"}}, 5);
  // Each connection moved bytes (so each retry looked like progress) and none lasted a window.
  CHECK(fx.server->count("GET", "/lfs-objects/") >= 2);
  CHECK(fx.server->paced_bytes() >= 8);
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::timeout);
  CHECK_THAT(result.error().message, Catch::Contains("too slow"));
  CHECK(seconds < 2.0);  // about one window across the attempts, not one per attempt
  check_nothing_published(fx);
}

TEST_CASE("a steady link above the floor is never timed out") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.trickle_bytes_per_second = 2u << 20;  // 2 MiB/s against a 512 KiB/s floor
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  auto [result, seconds] = timed_fetch(
      fx, {{"KERNELHUB_MIN_BYTES_PER_SECOND", "524288"}, {"KERNELHUB_MIN_SPEED_WINDOW", "0.3"}}, 0);
  CHECK(fx.server->paced_bytes() >= cpu_variant_files().at(kSoName).size());
  INFO((result ? std::string() : result.error().message));
  REQUIRE(result);
  CHECK(slurp(result->manifest.snapshot_path / "build" / kCpuVariant / kSoName) ==
        cpu_variant_files().at(kSoName));
  CHECK(seconds >= 0.3);  // the body really took several windows' worth of trickle steps
}

TEST_CASE("an API reply that never ends fails with timeout at the API deadline") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.endless = true;
  plan.trickle_bytes_per_second = 8192;  // far above the floor: only the deadline can end it
  plan.scope = "api";
  plan.path_filter = "/api/";
  fx.server->set_faults(plan);
  auto [result, seconds] = timed_fetch(fx,
                                       {{"KERNELHUB_MIN_BYTES_PER_SECOND", "64"},
                                        {"KERNELHUB_MIN_SPEED_WINDOW", "1"},
                                        {"KERNELHUB_API_DEADLINE", "1.5"}},
                                       3);
  CHECK(fx.server->paced_bytes() >= 4096);       // it kept streaming past any reply's size
  CHECK(fx.server->count("GET", "/api/") == 1);  // the deadline covers retries: none
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::timeout);
  CHECK_THAT(result.error().message, Catch::Contains("KERNELHUB_API_DEADLINE"));
  CHECK(seconds >= 1.4);
  CHECK(seconds < 3.0);
  check_nothing_published(fx);
}

TEST_CASE("a file body that never ends fails with a typed error within its bound") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.endless = true;
  plan.path_filter = kSoName;
  SECTION("at a pace the floor accepts: the file's deadline ends it (timeout)") {
    plan.trickle_bytes_per_second = 8192;
    fx.server->set_faults(plan);
    auto [result, seconds] = timed_fetch(
        fx, {{"KERNELHUB_MIN_BYTES_PER_SECOND", "0"}, {"KERNELHUB_DOWNLOAD_DEADLINE", "1.5"}}, 3);
    CHECK(fx.server->paced_bytes() >= 4096);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::timeout);
    CHECK_THAT(result.error().message, Catch::Contains("KERNELHUB_DOWNLOAD_DEADLINE"));
    CHECK(seconds >= 1.4);
    CHECK(seconds < 3.0);
    check_nothing_published(fx);
  }
  SECTION("at full speed: more bytes than the tree lists are refused (too_large)") {
    fx.server->set_faults(plan);
    auto [result, seconds] = timed_fetch(fx, {}, 3);
    CHECK(fx.server->paced_bytes() > cpu_variant_files().at(kSoName).size());
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::too_large);
    CHECK(seconds < 3.0);
    check_nothing_published(fx);
  }
}

TEST_CASE("a stall after the headers fails with timeout and names the stall variable") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.stall = milliseconds(5000);
  SECTION("on an API reply") {
    plan.scope = "api";
    plan.path_filter = "/api/";
    fx.server->set_faults(plan);
    auto [result, seconds] = timed_fetch(fx, {{"HF_HUB_ETAG_TIMEOUT", "0.3"}}, 1);
    CHECK(fx.server->count_status(200) == 2);  // headers went out, twice, then nothing
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::timeout);
    CHECK_THAT(result.error().message, Catch::Contains("HF_HUB_ETAG_TIMEOUT"));
    CHECK(seconds < 2.0);
    check_nothing_published(fx);
  }
  SECTION("on a file body") {
    plan.path_filter = kSoName;
    fx.server->set_faults(plan);
    auto [result, seconds] = timed_fetch(fx, {{"HF_HUB_DOWNLOAD_TIMEOUT", "0.3"}}, 1);
    CHECK(fx.server->count("GET", "/lfs-objects/") == 2);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::timeout);
    CHECK_THAT(result.error().message, Catch::Contains("HF_HUB_DOWNLOAD_TIMEOUT"));
    CHECK(seconds < 2.0);
    check_nothing_published(fx);
  }
}

TEST_CASE("an hour's Retry-After is not waited for, and retry waits add up to a cap") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.fail_status = 429;
  plan.fail_count = 1000;
  SECTION("one wait over KERNELHUB_MAX_RETRY_WAIT fails at once with rate_limited") {
    plan.retry_after_seconds = 3600;
    fx.server->set_faults(plan);
    // Real one-second units: a wait would show in the wall time.
    auto [result, seconds] = timed_fetch(fx, {{"KERNELHUB_RETRY_BASE_MS", "1000"}}, 5);
    CHECK(fx.server->count_status(429) == 1);  // asked once, never retried
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::rate_limited);
    CHECK_THAT(result.error().message, Catch::Contains("KERNELHUB_MAX_RETRY_WAIT (60 s)"));
    CHECK(seconds < 1.0);
  }
  SECTION("on a file download too: the downloader fails at once") {
    plan.retry_after_seconds = 3600;
    plan.fail_path_filter = "/lfs-objects/";  // the API calls pass, the .so's body is refused
    fx.server->set_faults(plan);
    auto [result, seconds] = timed_fetch(fx, {{"KERNELHUB_RETRY_BASE_MS", "1000"}}, 5);
    CHECK(fx.server->count_status(429) == 1);
    CHECK(fx.server->count("GET", "/lfs-objects/") == 1);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::rate_limited);
    CHECK_THAT(result.error().message, Catch::Contains("KERNELHUB_MAX_RETRY_WAIT (60 s)"));
    CHECK(seconds < 1.0);
    check_nothing_published(fx);
  }
  SECTION("waits adding up past KERNELHUB_MAX_RETRY_WAIT_TOTAL fail with rate_limited") {
    plan.retry_after_seconds = 10;  // RateLimit t=10: 11 units per wait
    fx.server->set_faults(plan);
    auto [result, seconds] = timed_fetch(fx, {{"KERNELHUB_MAX_RETRY_WAIT_TOTAL", "25"}}, 5);
    CHECK(fx.server->count_status(429) == 3);  // two waits of 11, a third would pass 25
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::rate_limited);
    CHECK_THAT(result.error().message, Catch::Contains("KERNELHUB_MAX_RETRY_WAIT_TOTAL"));
    CHECK(seconds < 1.0);
  }
}

TEST_CASE("the slow-upstream knobs travel through the fault plan's JSON") {
  testing::FaultPlan plan;
  plan.trickle_bytes_per_second = 7;
  plan.endless = true;
  plan.scope = "api";
  plan.redirect_to = "http://127.0.0.1:1";
  auto back = testing::fault_plan_from_json(testing::to_json(plan));
  REQUIRE(back);
  CHECK(back->trickle_bytes_per_second == 7);
  CHECK(back->endless);
  CHECK(back->scope == "api");
  CHECK(back->redirect_to == "http://127.0.0.1:1");
  auto bad = testing::fault_plan_from_json({{"scope", "everything"}});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::invalid_argument);
}

TEST_CASE("metadata.json read in memory is a file: its timeouts name the download variables") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.path_filter = "metadata.json";
  SECTION("a stall: HF_HUB_DOWNLOAD_TIMEOUT") {
    plan.stall = milliseconds(5000);
    fx.server->set_faults(plan);
    auto [result, seconds] = timed_fetch(fx, {{"HF_HUB_DOWNLOAD_TIMEOUT", "0.3"}}, 0);
    CHECK(fx.server->count("GET", "metadata.json") == 1);  // the stalled body
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::timeout);
    CHECK_THAT(result.error().message, Catch::Contains("metadata.json") &&
                                           Catch::Contains("HF_HUB_DOWNLOAD_TIMEOUT") &&
                                           !Catch::Contains("HF_HUB_ETAG_TIMEOUT"));
    CHECK(seconds < 2.0);
  }
  SECTION("a body that never ends: the file deadline, KERNELHUB_DOWNLOAD_DEADLINE") {
    plan.endless = true;
    plan.trickle_bytes_per_second = 8192;
    fx.server->set_faults(plan);
    auto [result, seconds] = timed_fetch(fx,
                                         {{"KERNELHUB_MIN_BYTES_PER_SECOND", "0"},
                                          {"KERNELHUB_DOWNLOAD_DEADLINE", "1.5"},
                                          {"KERNELHUB_API_DEADLINE", "1.5"}},
                                         3);
    CHECK(fx.server->paced_bytes() >= 4096);  // more than metadata.json holds
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::timeout);
    CHECK_THAT(result.error().message, Catch::Contains("KERNELHUB_DOWNLOAD_DEADLINE") &&
                                           !Catch::Contains("KERNELHUB_API_DEADLINE"));
    CHECK(seconds >= 1.4);
    CHECK(seconds < 3.0);
  }
  check_nothing_published(fx);
}
