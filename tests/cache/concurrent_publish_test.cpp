#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "cache/cache_test_util.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::cache;
using kernelhub::testing::slurp;
namespace fs = std::filesystem;

namespace {

// A variant big enough that the writers overlap: 24 files, a few hundred KB each.
std::map<std::string, std::string> variant_files() {
  std::map<std::string, std::string> files{{"metadata.json", "{\"version\":1}"}};
  for (int i = 0; i < 24; ++i) {
    std::string content(100'000 + i * 1'000, static_cast<char>('a' + i % 26));
    content += std::to_string(i);
    files["build/torch-cpu/relu/file" + std::to_string(i) + ".bin"] = content;
  }
  return files;
}

}  // namespace

TEST_CASE("two processes publishing the same snapshot at once end with one consistent snapshot",
          "[cache][concurrency]") {
  testing::TempDir tmp;
  const KernelCache cache(tmp.path() / "hub");
  const trust::RepoId repo{"kernels-community", "relu"};
  const auto files = variant_files();

  int go[2];
  REQUIRE(::pipe(go) == 0);
  std::vector<pid_t> children;
  for (int p = 0; p < 2; ++p) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(go[1]);
      char byte;
      (void)!::read(go[0], &byte, 1);  // start together: EOF when the parent closes its end
      for (int round = 0; round < 5; ++round) {
        // No lock on purpose: correctness must not depend on it.
        if (!test::publish(cache, repo, test::kCommit, files, "v1")) ::_exit(1);
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  ::close(go[0]);
  ::close(go[1]);
  for (const pid_t pid : children) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }

  const fs::path snap = cache.snapshot_dir(repo, test::kCommit);
  std::size_t links = 0;
  for (const auto& entry : fs::recursive_directory_iterator(snap)) {
    if (entry.is_directory()) continue;
    ++links;
    const std::string rel = entry.path().lexically_relative(snap).generic_string();
    INFO(rel);
    REQUIRE(files.contains(rel));  // nothing but the published files (no temp links)
    CHECK(fs::is_symlink(entry.path()));
    CHECK(slurp(entry.path()) == files.at(rel));
    CHECK(*trust::sha256_file_hex(entry.path()) == test::etag_of(files.at(rel)));
  }
  CHECK(links == files.size());

  std::size_t blobs = 0;
  for (const auto& entry : fs::directory_iterator(cache.blobs_dir(repo))) {
    const std::string name = entry.path().filename().string();
    INFO(name);
    CHECK(trust::is_lower_hex(name, 64));  // no *.incomplete left over
    CHECK(*trust::sha256_file_hex(entry.path()) == name);
    ++blobs;
  }
  CHECK(blobs == files.size());
  for (const auto& entry : fs::recursive_directory_iterator(cache.repo_dir(repo) / "refs")) {
    CHECK(entry.path().filename() == "v1");
  }
  CHECK(slurp(cache.repo_dir(repo) / "refs" / "v1") == test::kCommit);
}
