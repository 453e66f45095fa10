#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "cache/cache_test_util.hpp"
#include "kernelhub/cache/maintenance.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::cache;
namespace fs = std::filesystem;

namespace {

const trust::RepoId kRepo{"kernels-community", "relu"};
const trust::RepoId kOther{"SageAttention", "relu"};
const std::string kCommit2 = "fedcba9876543210fedcba9876543210fedcba98";

const std::map<std::string, std::string> kV1{{"build/v/__init__.py", "init"},
                                             {"build/v/_ops.py", "ops-1"}};
const std::map<std::string, std::string> kV2{{"build/v/__init__.py", "init"},
                                             {"build/v/_ops.py", "ops-two"}};

void overwrite(const fs::path& path, const std::string& content) {
  fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

}  // namespace

TEST_CASE("verify_cache re-hashes sha256 and git-sha1 blobs and removes corrupt ones",
          "[cache][maintenance]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path() / "cache");
  REQUIRE(test::publish(cache, kRepo, test::kCommit, kV1, "v1"));
  // A small non-LFS file is stored under its git blob sha1.
  const std::string git_etag = trust::git_blob_sha1_hex("readme");
  {
    auto w = BlobWriter::create(cache.blobs_dir(kRepo), {git_etag, DigestKind::git_sha1, 6});
    REQUIRE(w);
    REQUIRE(w->write("readme", 6));
    REQUIRE(w->finish());
    REQUIRE(w->commit());
  }
  auto clean = verify_cache(cache);
  REQUIRE(clean);
  CHECK(clean->checked == 3);
  CHECK(clean->corrupt.empty());

  const std::string bad = test::etag_of("ops-1");
  overwrite(cache.blobs_dir(kRepo) / bad, "ops-X");  // same length, different bytes
  overwrite(cache.blobs_dir(kRepo) / git_etag, "README");
  auto report = verify_cache(cache, kRepo);
  REQUIRE(report);
  CHECK(report->checked == 3);
  REQUIRE(report->corrupt.size() == 2);
  for (const auto& c : report->corrupt) {
    CHECK(c.repo == "kernels-community/relu");
    CHECK(!fs::exists(cache.blobs_dir(kRepo) / c.blob));
    CHECK(!c.reason.empty());
  }
  CHECK(fs::exists(cache.blobs_dir(kRepo) / test::etag_of("init")));
}

TEST_CASE("verify_cache does not follow a symlink planted among the blobs",
          "[cache][maintenance]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path() / "cache");
  REQUIRE(test::publish(cache, kRepo, test::kCommit, kV1, "v1"));
  const fs::path outside = tmp.path() / "outside";
  std::ofstream(outside) << "secret";
  const std::string name = trust::sha256_hex("secret");
  fs::create_symlink(outside, cache.blobs_dir(kRepo) / name);
  auto report = verify_cache(cache, kRepo);
  REQUIRE(report);
  REQUIRE(report->corrupt.size() == 1);
  CHECK(report->corrupt[0].blob == name);
  CHECK(fs::exists(outside));  // the link went, its target stayed
  CHECK(!fs::is_symlink(cache.blobs_dir(kRepo) / name));
}

TEST_CASE("verify_cache of a missing cache checks nothing", "[cache][maintenance]") {
  testing::TempDir tmp;
  auto report = verify_cache(KernelCache(tmp.path() / "absent"));
  REQUIRE(report);
  CHECK(report->checked == 0);
}

TEST_CASE("collect_garbage removes unreferenced snapshots, then unlinked blobs only",
          "[cache][maintenance]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path() / "cache");
  REQUIRE(test::publish(cache, kRepo, test::kCommit, kV1, "v1"));
  REQUIRE(test::publish(cache, kRepo, kCommit2, kV2,
                        "v1"));  // v1 moved on: the first snapshot is garbage
  REQUIRE(test::publish(cache, kOther, test::kCommit, kV1, "main"));
  // A temp of an in-flight download is not garbage collection's business.
  const fs::path temp = cache.blobs_dir(kRepo) / (test::etag_of("x") + ".0000abcd.incomplete");
  std::ofstream(temp) << "x";

  auto report = collect_garbage(cache);
  REQUIRE(report);
  CHECK(report->removed_snapshots == 1);
  CHECK(report->removed_blobs == 1);
  CHECK(report->freed_bytes == 5);  // "ops-1"
  CHECK(!fs::exists(cache.snapshot_dir(kRepo, test::kCommit)));
  CHECK(fs::exists(cache.snapshot_dir(kRepo, kCommit2) / "build/v/_ops.py"));
  CHECK(!fs::exists(cache.blobs_dir(kRepo) / test::etag_of("ops-1")));
  CHECK(fs::exists(cache.blobs_dir(kRepo) / test::etag_of("init")));  // shared by both snapshots
  CHECK(fs::exists(cache.snapshot_dir(kOther, test::kCommit) /
                   "build/v/_ops.py"));  // other repo untouched
  CHECK(fs::exists(temp));

  auto again = collect_garbage(cache);
  REQUIRE(again);
  CHECK(again->removed_snapshots == 0);
  CHECK(again->removed_blobs == 0);
}

TEST_CASE("collect_garbage never follows a snapshot symlink out of the cache",
          "[cache][maintenance]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path() / "cache");
  REQUIRE(test::publish(cache, kRepo, test::kCommit, kV1, "v1"));
  const fs::path outside = tmp.path() / "precious";
  fs::create_directories(outside);
  std::ofstream(outside / "file") << "keep me";
  fs::create_directory_symlink(
      outside, cache.repo_dir(kRepo) / "snapshots" / kCommit2);  // no ref points to it

  auto report = collect_garbage(cache);
  REQUIRE(report);
  CHECK(report->removed_snapshots == 1);
  CHECK(report->removed_blobs == 0);
  CHECK(fs::exists(outside / "file"));
  CHECK(!fs::exists(cache.repo_dir(kRepo) / "snapshots" / kCommit2));
}
