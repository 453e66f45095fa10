// `kernelhub ls` run as a child process against a cache laid out as huggingface_hub does.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/process.hpp"

namespace fs = std::filesystem;
using kernelhub::testing::run_command;
using kernelhub::testing::TempDir;

namespace {

const std::string kBin = std::string(KH_BIN_DIR) + "/kernelhub";
const std::string kCommit(40, 'a');
const std::string kSoBlob(64, 'b');  // LFS blobs are named by sha256, others by git sha1
const std::string kPyBlob(40, 'c');
constexpr const char* kVariant = "torch215-cxx11-cpu-x86_64-linux";

// kernels--kernels-community--relu with refs v1 and main on one commit, two variants,
// a 3 MiB .so blob and a small .py blob.
void make_cache(const fs::path& root) {
  const fs::path repo = root / "kernels--kernels-community--relu";
  const fs::path variant = repo / "snapshots" / kCommit / "build" / kVariant;
  fs::create_directories(repo / "blobs");
  fs::create_directories(repo / "refs");
  fs::create_directories(variant);
  fs::create_directories(repo / "snapshots" / kCommit / "build" / "torch-cpu");
  std::ofstream(repo / "blobs" / kSoBlob) << std::string(3 * 1024 * 1024, 'x');
  std::ofstream(repo / "blobs" / kPyBlob) << "import torch\n";
  fs::create_symlink("../../../../blobs/" + kSoBlob, variant / "_relu.abi3.so");
  fs::create_symlink("../../../../blobs/" + kPyBlob, variant / "__init__.py");
  std::ofstream(repo / "refs" / "v1") << kCommit;
  std::ofstream(repo / "refs" / "main") << kCommit;
}

}  // namespace

TEST_CASE("ls prints repos, revisions, refs, variants and human sizes", "[ls]") {
  TempDir dir;
  make_cache(dir.path());
  const auto r = run_command({kBin, "ls", "--cache-dir", dir.path().string()});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("kernels-community/relu"));
  CHECK_THAT(r.out, Catch::Contains(kCommit.substr(0, 12)));
  CHECK_THAT(r.out, Catch::Contains("main,v1"));
  CHECK_THAT(r.out, Catch::Contains("3.0 MiB"));
  CHECK_THAT(r.out, Catch::Contains(kVariant));
  CHECK_THAT(r.out, Catch::Contains("torch-cpu"));
}

TEST_CASE("ls --json gives sizes in bytes and full commits", "[ls]") {
  TempDir dir;
  make_cache(dir.path());
  const auto r = run_command({kBin, "ls", "--cache-dir", dir.path().string(), "--json"});
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["repos"].size() == 1);
  const auto& repo = doc["repos"][0];
  CHECK(repo["repo"] == "kernels-community/relu");
  const std::uint64_t expected = 3 * 1024 * 1024 + std::string("import torch\n").size();
  CHECK(repo["size_bytes"].get<std::uint64_t>() == expected);
  const auto& rev = repo["revisions"][0];
  CHECK(rev["commit"] == kCommit);
  CHECK(rev["refs"] == nlohmann::json::array({"main", "v1"}));
  CHECK(rev["variants"] == nlohmann::json::array({"torch-cpu", kVariant}));
  CHECK(rev["size_bytes"].get<std::uint64_t>() == expected);
}

TEST_CASE("ls on an empty or missing cache says so and succeeds", "[ls]") {
  TempDir dir;
  const auto missing = run_command({kBin, "ls", "--cache-dir", (dir.path() / "nothing").string()});
  CHECK(missing.exit_code == 0);
  CHECK_THAT(missing.out, Catch::Contains("No kernels cached"));

  const auto empty_json =
      run_command({kBin, "ls", "--json"}, {{"KERNELS_CACHE", dir.path().string()}});
  REQUIRE(empty_json.exit_code == 0);
  const auto doc = nlohmann::json::parse(empty_json.out);
  CHECK(doc["repos"].empty());
  CHECK(doc["cache_dir"] == dir.path().string());
}
