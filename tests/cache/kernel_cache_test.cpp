#include <catch2/catch.hpp>

#include <sys/select.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "cache/cache_test_util.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::cache;
using kernelhub::testing::slurp;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

const trust::RepoId kRepo{"kernels-community", "relu"};

const std::map<std::string, std::string> kFiles{
    {"metadata.json", "{}"},
    {"build/torch-cpu/relu/__init__.py", "init"},
    {"build/torch-cpu/relu/_ops.py", "ops"},
    {"build/torch211-cxx11-cpu-x86_64-linux/relu/_relu.abi3.so", "elf"},
};

}  // namespace

TEST_CASE("publish lays out blobs, relative symlinks and refs like huggingface_hub",
          "[cache][layout]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path() / "hub");
  REQUIRE(test::publish(cache, kRepo, test::kCommit, kFiles, "v1"));

  const fs::path repo = tmp.path() / "hub" / "kernels--kernels-community--relu";
  CHECK(cache.repo_dir(kRepo) == repo);
  CHECK(slurp(tmp.path() / "hub" / "CACHEDIR.TAG")
            .rfind("Signature: 8a477f597d28d172789f06886806bc55", 0) == 0);

  // refs/v1: exactly the 40-hex sha, no newline.
  CHECK(slurp(repo / "refs" / "v1") == test::kCommit);
  CHECK(fs::file_size(repo / "refs" / "v1") == 40);

  // blobs: exactly one file per distinct content, named by sha256.
  std::set<std::string> blobs;
  for (const auto& e : fs::directory_iterator(repo / "blobs"))
    blobs.insert(e.path().filename().string());
  std::set<std::string> want_blobs;
  for (const auto& [path, content] : kFiles) want_blobs.insert(test::etag_of(content));
  CHECK(blobs == want_blobs);

  const fs::path snap = repo / "snapshots" / test::kCommit;
  CHECK(fs::read_symlink(snap / "metadata.json") == fs::path("../../blobs/" + test::etag_of("{}")));
  CHECK(fs::read_symlink(snap / "build/torch-cpu/relu/__init__.py") ==
        fs::path("../../../../../blobs/" + test::etag_of("init")));
  CHECK(fs::read_symlink(snap / "build/torch211-cxx11-cpu-x86_64-linux/relu/_relu.abi3.so") ==
        fs::path("../../../../../blobs/" + test::etag_of("elf")));
  for (const auto& [path, content] : kFiles) {
    INFO(path);
    CHECK(fs::is_symlink(snap / path));
    CHECK(slurp(snap / path) == content);  // resolves through the relative link
  }

  CHECK(cache.read_ref(kRepo, "v1") == test::kCommit);
  CHECK_FALSE(cache.read_ref(kRepo, "v2"));
  CHECK_FALSE(cache.read_ref(kRepo, "../../etc/passwd"));
}

TEST_CASE("refs are replaced atomically and read from legacy models-- folders", "[cache][refs]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path());
  REQUIRE(cache.prepare_repo(kRepo));
  const std::string other(40, 'a');
  REQUIRE(cache.write_ref(kRepo, "v1", test::kCommit));
  REQUIRE(cache.write_ref(kRepo, "v1", other));
  CHECK(slurp(cache.repo_dir(kRepo) / "refs" / "v1") == other);
  REQUIRE(cache.write_ref(kRepo, "refs/pr/1", test::kCommit));  // nested refs get their folders
  CHECK(cache.read_ref(kRepo, "refs/pr/1") == test::kCommit);
  for (const auto& e : fs::recursive_directory_iterator(cache.repo_dir(kRepo) / "refs")) {
    CHECK(e.path().extension() != ".tmp");
  }

  auto bad = cache.write_ref(kRepo, "v3", "not-a-sha");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::invalid_argument);
  auto hostile = cache.write_ref(kRepo, "../escape", test::kCommit);
  REQUIRE_FALSE(hostile);
  CHECK(hostile.error().code == ErrorCode::unsafe_path);

  // Written by an older `kernels` (model-type repo); one with a trailing newline; one garbage.
  const fs::path legacy = tmp.path() / "models--kernels-community--relu" / "refs";
  fs::create_directories(legacy);
  std::ofstream(legacy / "v2") << test::kCommit << "\n";
  std::ofstream(legacy / "v7") << "garbage";
  std::ofstream(legacy / "main") << test::kCommit;
  CHECK(cache.read_ref(kRepo, "v2") == test::kCommit);
  CHECK_FALSE(cache.read_ref(kRepo, "v7"));
  CHECK(cache.cached_versions(kRepo) == std::vector<int>{1, 2});
}

TEST_CASE("link_snapshot refuses missing blobs and hostile paths, and relinks atomically",
          "[cache][layout]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path());
  REQUIRE(
      test::publish(cache, kRepo, test::kCommit, {{"a/b.txt", "one"}, {"c.txt", "two"}}, "main"));

  auto missing = cache.link_snapshot(kRepo, test::kCommit, {{"x.txt", std::string(64, 'f')}});
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::entry_not_found);
  CHECK_FALSE(fs::exists(cache.snapshot_dir(kRepo, test::kCommit) / "x.txt"));

  auto hostile =
      cache.link_snapshot(kRepo, test::kCommit, {{"../../../evil", test::etag_of("one")}});
  REQUIRE_FALSE(hostile);
  CHECK(hostile.error().code == ErrorCode::unsafe_path);

  auto bad_commit = cache.link_snapshot(kRepo, "../x", {});
  REQUIRE_FALSE(bad_commit);
  CHECK(bad_commit.error().code == ErrorCode::invalid_argument);

  // Same path, new blob: the link now points at the new content, no temp link left behind.
  REQUIRE(cache.link_snapshot(kRepo, test::kCommit, {{"a/b.txt", test::etag_of("two")}}));
  CHECK(slurp(cache.snapshot_dir(kRepo, test::kCommit) / "a/b.txt") == "two");
  for (const auto& e : fs::recursive_directory_iterator(cache.snapshot_dir(kRepo, test::kCommit))) {
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  }
}

TEST_CASE("list reports repos, revisions, refs, variants and sizes", "[cache][list]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path());
  CHECK(cache.list()->empty());
  REQUIRE(test::publish(cache, kRepo, test::kCommit, kFiles, "v1"));
  REQUIRE(cache.write_ref(kRepo, "main", test::kCommit));
  const std::string commit2(40, 'b');
  REQUIRE(
      test::publish(cache, kRepo, commit2, {{"build/torch-cpu/relu/__init__.py", "init2"}}, "v2"));
  const trust::RepoId other{"SageAttention", "sage"};
  REQUIRE(test::publish(cache, other, test::kCommit, {{"x", "12345"}}, "main"));
  fs::create_directories(tmp.path() / "models--not--ours");
  fs::create_directories(tmp.path() / "kernels--broken");

  auto repos = cache.list();
  REQUIRE(repos);
  REQUIRE(repos->size() == 2);
  const CachedRepo& sage = (*repos)[0];
  const CachedRepo& relu = (*repos)[1];
  CHECK(sage.repo == other);
  CHECK(sage.size_bytes == 5);
  CHECK(relu.repo == kRepo);
  CHECK(relu.path == cache.repo_dir(kRepo));
  CHECK(relu.size_bytes == 2 + 4 + 3 + 3 + 5);
  REQUIRE(relu.revisions.size() == 2);
  const CachedRevision& r1 = relu.revisions[0];
  CHECK(r1.commit == test::kCommit);
  CHECK(r1.refs == std::vector<std::string>{"main", "v1"});
  REQUIRE(r1.variants.size() == 2);
  CHECK(r1.variants[0].name == "torch-cpu");
  CHECK(r1.variants[1].name == "torch211-cxx11-cpu-x86_64-linux");
  CHECK(r1.size_bytes == 2 + 4 + 3 + 3);
  const CachedRevision& r2 = relu.revisions[1];
  CHECK(r2.commit == commit2);
  CHECK(r2.refs == std::vector<std::string>{"v2"});
  CHECK(r2.size_bytes == 5);
}

TEST_CASE("sweep_stale_temps removes only old *.incomplete files", "[cache][sweep]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path());
  REQUIRE(test::publish(cache, kRepo, test::kCommit, {{"a", "content"}}, "main"));
  const fs::path blobs = cache.blobs_dir(kRepo);
  const auto old_time = fs::file_time_type::clock::now() - 2h;
  const fs::path old_temp = blobs / (std::string(64, 'a') + ".0badf00d.incomplete");
  const fs::path fresh_temp = blobs / (std::string(64, 'b') + ".12345678.incomplete");
  const fs::path old_blob = blobs / std::string(64, 'c');
  for (const auto& p : {old_temp, fresh_temp, old_blob}) std::ofstream(p) << "x";
  fs::last_write_time(old_temp, old_time);
  fs::last_write_time(old_blob, old_time);

  CHECK(cache.sweep_stale_temps(1h) == 1);
  CHECK_FALSE(fs::exists(old_temp));
  CHECK(fs::exists(fresh_temp));
  CHECK(fs::exists(old_blob));
  CHECK(cache.has_blob(kRepo, test::etag_of("content")));
  CHECK(cache.sweep_stale_temps(1h) == 0);
}

TEST_CASE("sweep_stale_temps also removes staged refs, markers and symlinks a crash left",
          "[cache][sweep]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path());
  REQUIRE(test::publish(cache, kRepo, test::kCommit, {{"a", "content"}}, "main"));
  const fs::path repo = cache.repo_dir(kRepo);
  const fs::path ref_temp = repo / "refs" / "v1.0badf00d.tmp";
  const fs::path marker_temp =
      repo / ".no_exist" / test::kCommit / "kernel-status.toml.12345678.tmp";
  const fs::path link_temp = repo / "snapshots" / test::kCommit / ".a.abcdef01.tmp";
  const fs::path not_ours = repo / "refs" / "notes.tmp";  // no random part: not a temp of ours
  fs::create_directories(marker_temp.parent_path());
  for (const auto& p : {ref_temp, marker_temp, not_ours}) std::ofstream(p) << "x";
  fs::create_symlink("../../blobs/missing", link_temp);

  // Age 0 (a daemon that owns the cache at start-up): every temp goes, whatever its age.
  CHECK(cache.sweep_stale_temps(0s) == 3);
  CHECK_FALSE(fs::exists(ref_temp));
  CHECK_FALSE(fs::exists(marker_temp));
  CHECK_FALSE(fs::is_symlink(link_temp));
  CHECK(fs::exists(not_ours));
  CHECK(fs::is_symlink(repo / "snapshots" / test::kCommit / "a"));
  CHECK(cache.read_ref(kRepo, "main") == test::kCommit);
}

TEST_CASE("lock is an exclusive flock on a 0664 file under .locks that stays", "[cache][lock]") {
  testing::TempDir tmp;
  KernelCache cache(tmp.path());
  const fs::path lock_file =
      tmp.path() / ".locks" / "kernels--kernels-community--relu" / "download.lock";
  // The child is forked before the parent locks: a forked copy of the locked fd would
  // share the lock (flock belongs to the open file description).
  int start[2], ready[2];
  REQUIRE(::pipe(start) == 0);
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    char byte = 0;
    (void)!::read(start[0], &byte, 1);
    auto mine = cache.lock(kRepo, "download");  // blocks until the parent lets go
    byte = mine ? 'L' : 'E';
    (void)!::write(ready[1], &byte, 1);
    ::_exit(0);
  }
  {
    auto held = cache.lock(kRepo, "download");
    REQUIRE(held);
    struct stat st {};
    REQUIRE(::stat(lock_file.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0664);
    REQUIRE(::write(start[1], "g", 1) == 1);
    std::this_thread::sleep_for(300ms);
    // The child must still be waiting.
    fd_set set;
    FD_ZERO(&set);
    FD_SET(ready[0], &set);
    timeval zero{0, 0};
    CHECK(::select(ready[0] + 1, &set, nullptr, nullptr, &zero) == 0);
    held = cache.lock(kRepo, "other");  // move-assign releases the first lock
    char byte = 0;
    CHECK(::read(ready[0], &byte, 1) == 1);
    CHECK(byte == 'L');
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  for (int fd : {start[0], start[1], ready[0], ready[1]}) ::close(fd);
  CHECK(fs::exists(lock_file));  // never deleted

  auto bad = cache.lock(kRepo, "../x");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::unsafe_path);
}
