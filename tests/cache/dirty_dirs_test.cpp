// DirtyDirs: the folders a publish step changed, so that exactly those are fsynced.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <fstream>

#include "cache/cache_test_util.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::cache;
using namespace kernelhub::util;
namespace fs = std::filesystem;

TEST_CASE("DirtyDirs::create marks the parent of each folder it makes", "[cache][durable]") {
  testing::TempDir tmp;
  DirtyDirs dirty;
  REQUIRE(dirty.create(tmp.path() / "a" / "b" / "c"));
  CHECK(fs::is_directory(tmp.path() / "a" / "b" / "c"));
  CHECK(dirty.size() == 3);  // tmp, a, a/b gained an entry each
  REQUIRE(dirty.sync());
  CHECK(dirty.size() == 0);

  REQUIRE(dirty.create(tmp.path() / "a" / "b" / "c"));  // all there: nothing changed
  CHECK(dirty.size() == 0);
  dirty.add(tmp.path() / "a");
  dirty.add(tmp.path() / "a");
  CHECK(dirty.size() == 1);  // each folder once
  REQUIRE(dirty.sync());
}

TEST_CASE("DirtyDirs::create refuses a file in the way", "[cache][durable]") {
  testing::TempDir tmp;
  std::ofstream(tmp.path() / "f").flush();
  DirtyDirs dirty;
  const auto made = dirty.create(tmp.path() / "f" / "sub");
  REQUIRE(!made);
  CHECK(made.error().code == ErrorCode::io);
  const auto file = dirty.create(tmp.path() / "f");
  REQUIRE(!file);
  CHECK(file.error().message.find("Not a directory") != std::string::npos);
}

TEST_CASE("re-linking a published snapshot changes nothing on disk", "[cache][durable]") {
  testing::TempDir tmp;
  const KernelCache cache(tmp.path());
  const trust::RepoId repo{"kernels-community", "relu"};
  const std::map<std::string, std::string> files{{"build/v/a.py", "a"}, {"build/v/b.py", "b"}};
  REQUIRE(test::publish(cache, repo, test::kCommit, files, "v1"));
  const fs::path link = cache.snapshot_dir(repo, test::kCommit) / "build" / "v" / "a.py";
  struct stat before {};
  REQUIRE(::lstat(link.c_str(), &before) == 0);
  std::vector<SnapshotFile> links;
  links.reserve(files.size());
  for (const auto& [path, content] : files) links.push_back({path, test::etag_of(content)});
  REQUIRE(cache.link_snapshot(repo, test::kCommit, links));
  struct stat after {};
  REQUIRE(::lstat(link.c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);  // the link in place was kept, not replaced
}
