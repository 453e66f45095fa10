#include <catch2/catch.hpp>

#include "kernelhub/hub/server/local_store.hpp"
#include "kernelhub/trust/digest.hpp"
#include "server/store_fixture.hpp"

using namespace kernelhub;
using namespace kernelhub::hub::server;
using kernelhub::testing::kTestRepo;
namespace fs = std::filesystem;

TEST_CASE("publish snapshots the source tree with Hub oids and LFS flags", "[store]") {
  testing::StoreFixture fx;
  LocalStore store(fx.store);
  auto commit = store.read_commit(kTestRepo, fx.commit);
  REQUIRE(commit);
  std::vector<std::string> paths;
  for (const auto& [path, file] : commit->files) paths.push_back(path);
  CHECK(paths == std::vector<std::string>{"README.md", "build/torch-cpu/demo/__init__.py",
                                          "build/torch-cpu/demo/_ops.so",
                                          "build/torch-cpu/demo/sub/deep.txt",
                                          "build/torch-cpu/weights.dat"});  // no __pycache__ / .pyc
  for (const auto& [path, file] : commit->files) {
    const std::string bytes = testing::slurp(fx.source / path);
    CHECK(file.size == bytes.size());
    CHECK(file.sha256 == trust::sha256_hex(bytes));
    CHECK(file.git_oid == trust::git_blob_sha1_hex(bytes));
    CHECK(testing::slurp(store.object_path(kTestRepo, file.sha256)) == bytes);
  }
  CHECK_FALSE(commit->files.at("build/torch-cpu/demo/__init__.py").lfs);
  CHECK(commit->files.at("build/torch-cpu/demo/_ops.so").lfs);  // by extension
  CHECK(commit->files.at("build/torch-cpu/weights.dat").lfs);   // by size (2 MiB)
  CHECK_FALSE(commit->parent.has_value());
  CHECK(commit->message == "test build");
}

TEST_CASE("commit id is the sha1 of the stored canonical commit JSON", "[store]") {
  testing::StoreFixture fx;
  const auto text =
      testing::slurp(fx.store / kTestRepo.org / kTestRepo.name / "commits" / (fx.commit + ".json"));
  trust::Sha1 sha1;
  sha1.update(text);
  CHECK(sha1.final_hex() == fx.commit);
  auto commit = LocalStore(fx.store).read_commit(kTestRepo, fx.commit);
  REQUIRE(commit);
  auto canonical = canonical_commit_json(*commit);
  REQUIRE(canonical);
  CHECK(*canonical == text);
}

TEST_CASE("resolve accepts branch, tag, sha and refs/ forms and types its errors", "[store]") {
  testing::StoreFixture fx;
  LocalStore store(fx.store);
  for (const char* rev : {"main", "v1", "v1.0.0", "refs/heads/v1", "refs/tags/v1.0.0"}) {
    auto sha = store.resolve(kTestRepo, rev);
    REQUIRE(sha);
    CHECK(*sha == fx.commit);
  }
  CHECK(*store.resolve(kTestRepo, fx.commit) == fx.commit);
  CHECK(store.resolve(kTestRepo, "v2").error().code == ErrorCode::revision_not_found);
  CHECK(store.resolve(kTestRepo, "refs/tags/v1").error().code == ErrorCode::revision_not_found);
  CHECK(store.resolve(kTestRepo, std::string(40, 'a')).error().code ==
        ErrorCode::revision_not_found);
  CHECK(store.resolve(kTestRepo, "../../etc").error().code == ErrorCode::revision_not_found);
  CHECK(store.resolve({"kernels-community", "missing"}, "main").error().code ==
        ErrorCode::repo_not_found);
}

TEST_CASE("a second publish moves the branch and keeps the old commit reachable", "[store]") {
  testing::StoreFixture fx;
  testing::write_file(fx.source / "build/torch-cpu/demo/__init__.py", "changed = True\n");
  fs::remove(fx.source / "README.md");
  auto req = fx.request("v1");
  req.timestamp = 1700000100;
  auto second = publish_directory(req);
  REQUIRE(second);
  CHECK(second->commit != fx.commit);
  CHECK(second->parent == fx.commit);

  LocalStore store(fx.store);
  auto refs = store.list_refs(kTestRepo);
  REQUIRE(refs);
  REQUIRE(refs->branches.size() == 2);
  CHECK(refs->branches[0].name == "main");
  CHECK(refs->branches[0].commit == fx.commit);  // other branches untouched
  CHECK(refs->branches[1].name == "v1");
  CHECK(refs->branches[1].commit == second->commit);
  auto old_commit = store.read_commit(kTestRepo, fx.commit);
  REQUIRE(old_commit);
  CHECK(old_commit->files.count("README.md") == 1);
  auto new_commit = store.read_commit(kTestRepo, second->commit);
  REQUIRE(new_commit);
  CHECK(new_commit->files.count("README.md") == 0);  // a full snapshot, not an overlay
  CHECK(new_commit->parent == fx.commit);
}

TEST_CASE("a tag never moves to another commit", "[store]") {
  testing::StoreFixture fx;
  testing::write_file(fx.source / "extra.txt", "x");
  auto req = fx.request("v1");
  req.tag = "v1.0.0";
  auto moved = publish_directory(req);
  REQUIRE_FALSE(moved);
  CHECK(moved.error().message.find("already points") != std::string::npos);
  CHECK(*LocalStore(fx.store).resolve(kTestRepo, "v1") == fx.commit);  // branch untouched as well
}

TEST_CASE("list_tree lists children, recursive trees and refuses unknown folders", "[store]") {
  testing::StoreFixture fx;
  auto commit = LocalStore(fx.store).read_commit(kTestRepo, fx.commit);
  REQUIRE(commit);
  const auto paths = [](const std::vector<StoreEntry>& entries) {
    std::vector<std::string> out;
    for (const auto& e : entries) out.push_back((e.file ? "f:" : "d:") + e.path);
    return out;
  };
  auto top = list_tree(*commit, "", false);
  REQUIRE(top);
  CHECK(paths(*top) == std::vector<std::string>{"f:README.md", "d:build"});
  auto build = list_tree(*commit, "build/torch-cpu", false);
  REQUIRE(build);
  CHECK(paths(*build) ==
        std::vector<std::string>{"d:build/torch-cpu/demo", "f:build/torch-cpu/weights.dat"});
  auto all = list_tree(*commit, "build", true);
  REQUIRE(all);
  CHECK(paths(*all) == std::vector<std::string>{
                           "d:build/torch-cpu", "d:build/torch-cpu/demo",
                           "f:build/torch-cpu/demo/__init__.py", "f:build/torch-cpu/demo/_ops.so",
                           "d:build/torch-cpu/demo/sub", "f:build/torch-cpu/demo/sub/deep.txt",
                           "f:build/torch-cpu/weights.dat"});
  CHECK(list_tree(*commit, "nope", false).error().code == ErrorCode::entry_not_found);
  CHECK(list_tree(*commit, "README.md", false).error().code == ErrorCode::entry_not_found);
}

TEST_CASE("publish refuses symlinks and hostile names and writes nothing", "[store][publish]") {
  testing::StoreFixture fx;
  const auto refuse = [&](const fs::path& bad) {
    auto r = publish_directory(fx.request("v1"));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::unsafe_path);
    CHECK(*LocalStore(fx.store).resolve(kTestRepo, "v1") == fx.commit);
    fs::remove(bad);
  };
  fs::create_symlink("/etc/passwd", fx.source / "link");
  refuse(fx.source / "link");
  testing::write_file(fx.source / "evil\nname.py", "x");
  refuse(fx.source / "evil\nname.py");
  testing::write_file(fx.source / "back\\slash.py", "x");
  refuse(fx.source / "back\\slash.py");
  testing::write_file(fx.source / ".git" / "config", "x");
  auto r = publish_directory(fx.request("v1"));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::unsafe_path);
}

TEST_CASE("ref names are validated before touching the filesystem", "[store]") {
  CHECK(validate_ref_name("v1"));
  CHECK(validate_ref_name("release/2.0"));
  CHECK_FALSE(validate_ref_name(""));
  CHECK_FALSE(validate_ref_name("../x"));
  CHECK_FALSE(validate_ref_name("a//b"));
  CHECK_FALSE(validate_ref_name(".hidden"));
  CHECK_FALSE(validate_ref_name("a b"));
  CHECK_FALSE(validate_ref_name("x.lock"));
}
