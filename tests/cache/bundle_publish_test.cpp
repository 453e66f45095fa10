// An import publishes all or nothing, and only adds: a manifest whose paths clash (a file that
// is also a folder) is refused before a blob is written; a publish failing at its last step
// takes back every blob, link, folder and ref it made and leaves what was there; and a
// bundle that would change a snapshot the cache holds is refused (a commit's files never
// change), while one that adds a variant to it is not.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "kernelhub/cache/bundle/bundle_import.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/unique_fd.hpp"
#include "support/bundle_builder.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace kernelhub;
using namespace kernelhub::cache;
using namespace kernelhub::cache::bundle;
using kernelhub::testing::TempDir;

namespace {

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";
const std::string kOther = "fedcba9876543210fedcba9876543210fedcba98";
const std::string kCpu = "torch215-cxx11-cpu-x86_64-linux";
const std::string kCuda = "torch215-cxx11-cu130-x86_64-linux";
const trust::RepoId kRepo{"kernels-community", "relu"};

std::string b64_sha256(const std::string& content) {
  trust::Sha256 h;
  h.update(content);
  return h.final_base64();
}

// build/<variant>/ of a small kernel: a python file, a shared object and the metadata.json
// that holds their digests.
std::map<std::string, std::string> variant_files(
    const std::string& variant, const std::string& init = "from ._ops import ops\n") {
  const std::string so = std::string(
                             "\x7f"
                             "ELF",
                             4) +
                         std::string(2048, '\x01');
  nlohmann::json meta = {{"name", "relu"}, {"id", "_relu"}, {"version", 1}};
  meta["digest"] = {
      {"algorithm", "sha256"},
      {"files", {{"__init__.py", b64_sha256(init)}, {"_relu.abi3.so", b64_sha256(so)}}}};
  const std::string prefix = "build/" + variant + "/";
  return {{prefix + "__init__.py", init},
          {prefix + "_relu.abi3.so", so},
          {prefix + "metadata.json", meta.dump()}};
}

Result<std::vector<ImportedRepo>> import_path(const fs::path& bundle, const KernelCache& cache) {
  const UniqueFd fd(::open(bundle.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  return import_bundle(fd.get(), cache, {});
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.insert(it->path().filename().string());
  }
  return names;
}

}  // namespace

TEST_CASE("a manifest path that is also a folder is refused before a blob is written",
          "[bundle][publish]") {
  TempDir dir;
  // No metadata.json (a legacy build): nothing but the tree itself can tell the clash.
  const std::map<std::string, std::string> files = {
      {"build/" + kCpu + "/__init__.py", "from .x import a\n"},
      {"build/" + kCpu + "/x/a", "a file\n"},
      {"build/" + kCpu + "/x/a/b", "and a file below it\n"}};
  const fs::path bundle = dir.path() / "clash.tar.zst";
  testing::write_repo_bundle(bundle, kRepo, kCommit, {"v1"}, {kCpu}, files);
  const KernelCache cache(dir.path() / "cache");
  auto imported = import_path(bundle, cache);
  REQUIRE_FALSE(imported);
  CHECK(imported.error().code == ErrorCode::malformed_response);
  CHECK_THAT(imported.error().message,
             Catch::Contains("x/a is listed as a file and as the folder of"));
  // Nothing at all: no blob, no snapshot, no ref (the repo folder the import made is gone).
  CHECK_FALSE(fs::exists(cache.repo_dir(kRepo)));
}

TEST_CASE("a publish that fails at its last step takes back all it made, and only that",
          "[bundle][publish]") {
  TempDir dir;
  const KernelCache cache(dir.path() / "cache");
  // What the cache held before: another commit's snapshot with its blob, and refs.
  const fs::path earlier = dir.path() / "earlier.tar.zst";
  testing::write_repo_bundle(earlier, kRepo, kOther, {"main"}, {kCpu},
                             variant_files(kCpu, "# earlier\n"));
  REQUIRE(import_path(earlier, cache));
  const auto blobs_before = names_in(cache.blobs_dir(kRepo));
  // refs/v1 is a folder: the last ref of the publish cannot be written.
  fs::create_directories(cache.repo_dir(kRepo) / "refs" / "v1" / "x");

  const fs::path bundle = dir.path() / "b.tar.zst";
  testing::write_repo_bundle(bundle, kRepo, kCommit, {"main", "release/2", "v1"}, {kCpu},
                             variant_files(kCpu));
  auto imported = import_path(bundle, cache);
  REQUIRE_FALSE(imported);
  CHECK(imported.error().code == ErrorCode::io);
  INFO(imported.error().message);
  // Its blobs, its snapshot and its refs are gone; refs/main is back at the earlier commit.
  CHECK(names_in(cache.blobs_dir(kRepo)) == blobs_before);
  CHECK_FALSE(fs::exists(cache.snapshot_dir(kRepo, kCommit)));
  CHECK(cache.read_ref(kRepo, "main") == kOther);
  CHECK_FALSE(fs::exists(cache.repo_dir(kRepo) / "refs" / "release"));
  CHECK(fs::is_directory(cache.repo_dir(kRepo) / "refs" / "v1" / "x"));
  // What was there stays, whole.
  CHECK(testing::slurp(cache.snapshot_dir(kRepo, kOther) / "build" / kCpu / "__init__.py") ==
        "# earlier\n");
}

TEST_CASE("an import never changes a snapshot the cache holds, it may add a variant to it",
          "[bundle][publish]") {
  TempDir dir;
  const KernelCache cache(dir.path() / "cache");
  const fs::path genuine = dir.path() / "genuine.tar.zst";
  testing::write_repo_bundle(genuine, kRepo, kCommit, {"v1"}, {kCpu}, variant_files(kCpu));
  REQUIRE(import_path(genuine, cache));
  const fs::path init = cache.snapshot_dir(kRepo, kCommit) / "build" / kCpu / "__init__.py";
  const auto genuine_link = fs::read_symlink(init);

  // The same commit with other bytes, self-consistent (metadata.json digests and all).
  const fs::path forged = dir.path() / "forged.tar.zst";
  testing::write_repo_bundle(forged, kRepo, kCommit, {"v1"}, {kCpu},
                             variant_files(kCpu, "import os; os.system('evil')\n"));
  // The same commit with a file more in the variant the cache holds.
  auto more = variant_files(kCpu);
  more["build/" + kCpu + "/_relu/__init__.py"] = "shadowing the extension\n";
  const fs::path added = dir.path() / "added.tar.zst";
  testing::write_repo_bundle(added, kRepo, kCommit, {"v1"}, {kCpu}, more);
  for (const auto& bundle : {forged, added}) {
    INFO(bundle.filename());
    auto imported = import_path(bundle, cache);
    REQUIRE_FALSE(imported);
    CHECK(imported.error().code == ErrorCode::hash_mismatch);
    CHECK_THAT(imported.error().message, Catch::Contains("a commit's files never change"));
    CHECK(fs::read_symlink(init) == genuine_link);
    CHECK(testing::slurp(init) == "from ._ops import ops\n");
    CHECK_FALSE(fs::exists(cache.snapshot_dir(kRepo, kCommit) / "build" / kCpu / "_relu"));
  }

  // Another variant of the commit, and the genuine bundle again: both fine.
  const fs::path cuda = dir.path() / "cuda.tar.zst";
  testing::write_repo_bundle(cuda, kRepo, kCommit, {"v1"}, {kCuda}, variant_files(kCuda));
  CHECK(import_path(cuda, cache));
  CHECK(import_path(genuine, cache));
  CHECK(fs::is_symlink(cache.snapshot_dir(kRepo, kCommit) / "build" / kCuda / "__init__.py"));
}
