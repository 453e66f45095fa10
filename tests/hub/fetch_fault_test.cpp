// Fault injection through the HubServer's FaultPlan knobs: resets, corruption, 429/503
// storms, stalls, ignored Range, and a metadata.json that does not match the files.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>

#include "hub/fetch_fixture.hpp"
#include "kernelhub/hub/downloader.hpp"
#include "kernelhub/hub/server/store_publisher.hpp"
#include "kernelhub/trust/digest.hpp"

using namespace kernelhub;
using namespace kernelhub::testing;
namespace fs = std::filesystem;

namespace {

fs::path repo_dir(const fs::path& cache_root, const std::string& name = "demo-fetch") {
  return cache_root / ("kernels--kernels-community--" + name);
}

bool has_any_file(const fs::path& dir) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory()) return true;
  }
  return false;
}

void check_so_correct(const hub::FetchResult& result) {
  const auto so = result.manifest.snapshot_path / "build" / kCpuVariant / kSoName;
  CHECK(slurp(so) == cpu_variant_files().at(kSoName));
}

void check_nothing_published(const FetchFixture& fx, const std::string& name = "demo-fetch") {
  const auto repo = repo_dir(fx.cache_root, name);
  CHECK_FALSE(fs::exists(repo / "snapshots" / fx.commit));
  CHECK_FALSE(fs::exists(repo / "refs" / "v1"));
  CHECK_FALSE(fs::exists(repo / "blobs" / trust::sha256_hex(cpu_variant_files().at(kSoName))));
  CHECK_FALSE(has_any_file(repo / "blobs"));  // no committed blob, no temp left behind
}

}  // namespace

TEST_CASE("a connection reset mid-body resumes with Range and yields the correct file") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.reset_after_bytes = 300 * 1024;
  plan.reset_times = 2;
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  auto result = fx.fetch();
  REQUIRE(result);
  check_so_correct(*result);
  CHECK(fx.server->count("GET",
                         "/resolve/" + fx.commit + "/build/" + kCpuVariant + "/" + kSoName) == 3);
  CHECK(fx.server->count_status(206) >= 1);
}

TEST_CASE("a server that ignores Range after a reset still yields the correct file") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.reset_after_bytes = 300 * 1024;
  plan.ignore_range = true;
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  auto result = fx.fetch();
  REQUIRE(result);
  check_so_correct(*result);
  CHECK(fx.server->count("GET",
                         "/resolve/" + fx.commit + "/build/" + kCpuVariant + "/" + kSoName) >= 2);
  CHECK(fx.server->count_status(206) == 0);
}

TEST_CASE("a 416 on resume starts the file over, and says what it means when it stays") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.reset_after_bytes = 300 * 1024;  // the first body breaks; the resume is refused
  plan.reset_times = 1;
  plan.refuse_ranges = true;
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  SECTION("a retry left: the whole file again, and the fetch succeeds") {
    auto result = fx.fetch();
    INFO((result ? std::string() : result.error().message));
    REQUIRE(result);
    check_so_correct(*result);
    CHECK(fx.server->count_status(416) == 1);  // the fault happened
  }
  SECTION("no retry left: http_status that explains the 416") {
    auto config = fx.config();
    config.max_retries = 1;
    auto result = fx.fetch(FetchFixture::request(), config);
    CHECK(fx.server->count_status(416) == 1);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::http_status);
    CHECK_THAT(result.error().message, Catch::Contains("HTTP 416") &&
                                           Catch::Contains("refused to resume at byte 307200") &&
                                           Catch::Contains("shorter than the Hub's tree listing") &&
                                           Catch::Contains("retry later"));
    check_nothing_published(fx);
  }
}

TEST_CASE("a corrupted byte fails with hash_mismatch and publishes nothing") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.corrupt_one_byte = true;
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  auto result = fx.fetch();
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::hash_mismatch);
  check_nothing_published(fx);
}

TEST_CASE("a few 503 or 429 answers are retried, a storm ends in a typed error") {
  FetchFixture fx;
  testing::FaultPlan plan;
  SECTION("503 then success") {
    plan.fail_status = 503;
    plan.fail_count = 3;
    fx.server->set_faults(plan);
    auto result = fx.fetch();
    REQUIRE(result);
    check_so_correct(*result);
    CHECK(fx.server->count_status(503) == 3);
  }
  SECTION("429 then success") {
    plan.fail_status = 429;
    plan.fail_count = 2;
    fx.server->set_faults(plan);
    REQUIRE(fx.fetch());
    CHECK(fx.server->count_status(429) == 2);
  }
  SECTION("429 storm") {
    plan.fail_status = 429;
    plan.fail_count = 1000;
    fx.server->set_faults(plan);
    auto result = fx.fetch();
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::rate_limited);
    CHECK(fx.server->count_status(429) == 6);  // first try + 5 retries
  }
  SECTION("503 storm") {
    plan.fail_status = 503;
    plan.fail_count = 1000;
    fx.server->set_faults(plan);
    auto result = fx.fetch();
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::http_status);
  }
}

TEST_CASE("a stalled download fails with timeout within bounded time") {
  FetchFixture fx;
  testing::FaultPlan plan;
  plan.stall = std::chrono::milliseconds(5000);
  plan.path_filter = kSoName;
  fx.server->set_faults(plan);
  auto config = fx.config();
  config.download_timeout = std::chrono::milliseconds(200);
  config.max_retries = 2;
  const auto start = std::chrono::steady_clock::now();
  auto result = fx.fetch(FetchFixture::request(), config);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::timeout);
  CHECK(elapsed < std::chrono::seconds(4));
  check_nothing_published(fx);
}

TEST_CASE("files that do not match metadata.json are never published") {
  FetchFixture fx;
  const fs::path source = fx.tmp.path() / "bad-src";
  write_variant(source / "build" / kCpuVariant, cpu_variant_files());
  {
    std::ofstream(source / "build" / kCpuVariant / "_ops.py", std::ios::app)
        << "# changed after digesting\n";
  }
  hub::server::PublishRequest publish;
  publish.root = fx.store;
  publish.repo = trust::RepoId{"kernels-community", "bad-digest"};
  publish.branch = "v1";
  publish.source = source;
  auto published = hub::server::publish_directory(publish);
  REQUIRE(published);
  auto request = FetchFixture::request();
  request.repo = publish.repo;
  auto result = fx.fetch(request, fx.config());
  REQUIRE_FALSE(result);
  CHECK(result.error().code == ErrorCode::hash_mismatch);
  CHECK(result.error().message.find("_ops.py") != std::string::npos);
  const auto repo = repo_dir(fx.cache_root, "bad-digest");
  CHECK_FALSE(fs::exists(repo / "snapshots" / published->commit));
  CHECK_FALSE(fs::exists(repo / "refs" / "v1"));
  CHECK_FALSE(has_any_file(repo / "blobs"));
}

TEST_CASE("the downloader retries file GETs on 503 and maps a 429 storm to rate_limited") {
  FetchFixture fx;
  const auto content = cpu_variant_files().at(kSoName);
  const fs::path blobs = fx.tmp.path() / "blobs";
  fs::create_directories(blobs);
  const std::string url = fx.server->endpoint() + "/kernels/" + kKernelRepo.str() + "/resolve/" +
                          fx.commit + "/build/" + kCpuVariant + "/" + kSoName;
  const cache::ExpectedBlob expected{trust::sha256_hex(content), cache::DigestKind::sha256,
                                     content.size()};
  testing::FaultPlan plan;
  SECTION("503 twice") {
    plan.fail_status = 503;
    plan.fail_count = 2;
    fx.server->set_faults(plan);
    auto writer = cache::BlobWriter::create(blobs, expected);
    REQUIRE(writer);
    hub::Downloader downloader(fx.config());
    REQUIRE(downloader.run({{kSoName, url, &*writer}}));
    CHECK(writer->sha256_hex() == expected.etag);
    CHECK(downloader.stats().retried == 2);
  }
  SECTION("429 storm") {
    plan.fail_status = 429;
    plan.fail_count = 1000;
    fx.server->set_faults(plan);
    auto writer = cache::BlobWriter::create(blobs, expected);
    REQUIRE(writer);
    auto result = hub::Downloader(fx.config()).run({{kSoName, url, &*writer}});
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::rate_limited);
  }
}
