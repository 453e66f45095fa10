// cache::open_handout, the one fd hand-out of the daemon and the embedded client: each way a
// cache can be tampered with is refused with its own error code, and nothing is followed.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "cache/cache_test_util.hpp"
#include "kernelhub/cache/handout.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/cache/repo_folder.hpp"
#include "support/open_file_limit.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::cache;
namespace fs = std::filesystem;

namespace {

const trust::RepoId kRepo{"kernels-community", "relu"};
const std::string kSo = "build/torch215-cxx11-cpu-x86_64-linux/_relu.abi3.so";
const std::string kInit = "build/torch215-cxx11-cpu-x86_64-linux/__init__.py";
const std::map<std::string, std::string> kFiles{{kSo, "elf bytes"}, {kInit, "init"}};

struct Fixture {
  testing::TempDir temp;
  KernelCache cache{temp.path() / "hub"};
  UniqueFd root;
  std::vector<HandoutFile> files;

  Fixture() {
    REQUIRE(test::publish(cache, kRepo, test::kCommit, kFiles, "v1"));
    root.reset(::open(cache.root().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(root);
    for (const auto& [path, content] : kFiles)
      files.push_back({path, test::etag_of(content), content.size()});
  }
  fs::path blob(const std::string& content) const {
    return cache.blobs_dir(kRepo) / test::etag_of(content);
  }
  Result<std::vector<UniqueFd>> open(const HandoutOptions& options = {}) const {
    return open_handout(root.get(), kRepo, test::kCommit, files, options);
  }
};

ErrorCode code_of(const Result<std::vector<UniqueFd>>& r) {
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  return r.error().code;
}

std::string read_all(int fd) {
  std::string out(256, '\0');
  const ssize_t n = ::pread(fd, out.data(), out.size(), 0);
  REQUIRE(n >= 0);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace

TEST_CASE("repo folder names round-trip and nothing else parses", "[cache][handout]") {
  CHECK(repo_folder_name(kRepo) == "kernels--kernels-community--relu");
  CHECK(repo_folder_name(kRepo, RepoKind::models) == "models--kernels-community--relu");
  CHECK(parse_repo_folder_name("kernels--kernels-community--relu") == kRepo);
  const trust::RepoId dotted{"a.b", "c_d-e"};
  CHECK(parse_repo_folder_name(repo_folder_name(dotted)) == dotted);
  for (const char* other : {"models--a--b", "kernels--a", "kernels--a--", "kernels----b",
                            "kernels--a--b--c", ".locks", "CACHEDIR.TAG", "kernels--../x--y"}) {
    INFO(other);
    CHECK_FALSE(parse_repo_folder_name(other));
  }
}

TEST_CASE("a published manifest is handed out read-only, in order", "[cache][handout]") {
  Fixture f;
  auto fds = f.open();
  INFO((fds ? "" : fds.error().message));
  REQUIRE(fds);
  REQUIRE(fds->size() == f.files.size());
  for (std::size_t i = 0; i < fds->size(); ++i) {
    CHECK(read_all((*fds)[i].get()) == kFiles.at(f.files[i].path));
    // O_NONBLOCK may stay set (it changes nothing for a regular file); read-only is the point.
    CHECK((::fcntl((*fds)[i].get(), F_GETFL) & O_ACCMODE) == O_RDONLY);
    CHECK(check_blob_fd((*fds)[i].get(), f.files[i].size, f.files[i].path));
  }
}

TEST_CASE("a symlinked blobs folder is unsafe_path", "[cache][handout]") {
  Fixture f;
  const auto blobs = f.cache.blobs_dir(kRepo);
  fs::rename(blobs, f.temp.path() / "elsewhere");
  fs::create_directory_symlink(f.temp.path() / "elsewhere", blobs);
  REQUIRE(fs::is_symlink(blobs));
  CHECK(code_of(f.open()) == ErrorCode::unsafe_path);
}

TEST_CASE("a symlinked blob is unsafe_path", "[cache][handout]") {
  Fixture f;
  const auto blob = f.blob("elf bytes");
  std::ofstream(f.temp.path() / "outside") << "elf bytes";
  fs::remove(blob);
  fs::create_symlink(f.temp.path() / "outside", blob);
  REQUIRE(fs::is_symlink(blob));
  CHECK(code_of(f.open()) == ErrorCode::unsafe_path);
}

TEST_CASE("a FIFO planted as a blob is refused without blocking", "[cache][handout]") {
  Fixture f;
  const auto blob = f.blob("init");
  fs::remove(blob);
  REQUIRE(::mkfifo(blob.c_str(), 0644) == 0);
  CHECK(code_of(f.open()) == ErrorCode::unsafe_path);
}

TEST_CASE("a blob of the wrong size is size_mismatch", "[cache][handout]") {
  Fixture f;
  const auto blob = f.blob("elf bytes");
  fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(blob, std::ios::app) << "appended";
  REQUIRE(fs::file_size(blob) != kFiles.at(kSo).size());
  CHECK(code_of(f.open()) == ErrorCode::size_mismatch);
}

TEST_CASE("a missing blob and a missing snapshot link are entry_not_found", "[cache][handout]") {
  Fixture f;
  SECTION("blob") {
    fs::remove(f.blob("init"));
    CHECK(code_of(f.open()) == ErrorCode::entry_not_found);
  }
  SECTION("snapshot link") {
    fs::remove(f.cache.snapshot_dir(kRepo, test::kCommit) / kInit);
    CHECK(code_of(f.open()) == ErrorCode::entry_not_found);
  }
}

TEST_CASE("a snapshot link naming another blob is unsafe_path", "[cache][handout]") {
  Fixture f;
  const auto link = f.cache.snapshot_dir(kRepo, test::kCommit) / kInit;
  const auto target = fs::read_symlink(link);
  fs::remove(link);
  fs::create_symlink(target.parent_path() / test::etag_of("elf bytes"), link);
  CHECK(code_of(f.open()) == ErrorCode::unsafe_path);
}

TEST_CASE("writable by others: an own blob loses the bits, another's is unsafe_kernel",
          "[cache][handout]") {
  Fixture f;
  const auto blob = f.blob("init");
  fs::permissions(blob, fs::perms::group_write | fs::perms::others_write, fs::perm_options::add);
  REQUIRE((fs::status(blob).permissions() & fs::perms::others_write) != fs::perms::none);

  SECTION("the owner hands out: group/other write removed, owner write kept (user cache)") {
    fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
    REQUIRE(f.open());
    const auto perms = fs::status(blob).permissions();
    CHECK((perms & (fs::perms::group_write | fs::perms::others_write)) == fs::perms::none);
    CHECK((perms & fs::perms::owner_write) != fs::perms::none);
  }
  SECTION("the daemon's cache: every write bit removed") {
    fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
    REQUIRE(f.open(HandoutOptions{0222}));
    CHECK((fs::status(blob).permissions() & fs::perms::all) ==
          (fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read));
  }
  SECTION("nothing stripped (a blob this process does not own): refused") {
    CHECK(code_of(f.open(HandoutOptions{0})) == ErrorCode::unsafe_kernel);
  }
}

TEST_CASE("a received fd opened for writing is refused", "[cache][handout]") {
  Fixture f;
  const auto path = f.temp.path() / "rw";
  std::ofstream(path) << "abc";
  const UniqueFd rw(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  REQUIRE(rw);
  const auto r = check_blob_fd(rw.get(), 3, "rw");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::unsafe_path);
  const UniqueFd ro(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  CHECK(check_blob_fd(ro.get(), 3, "ro"));
}

TEST_CASE("a hostile manifest names nothing outside the blobs folder", "[cache][handout]") {
  Fixture f;
  f.files[0].etag = "../../" + test::etag_of("init");
  CHECK(code_of(f.open()) == ErrorCode::unsafe_path);
  Fixture g;
  CHECK(code_of(open_handout(g.root.get(), kRepo, "../x", g.files)) == ErrorCode::invalid_argument);
}

TEST_CASE("a hand-out at the open-file limit says which limit to raise", "[cache][handout]") {
  Fixture fx;
  Result<std::vector<UniqueFd>> r = fail(ErrorCode::internal, "not run");
  bool reached = false;
  {
    const testing::OpenFileLimit limit;
    reached = limit.reached();
    r = fx.open();
  }
  REQUIRE(reached);  // the fault: no descriptor left
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::io);
  CHECK_THAT(r.error().message, Catch::Contains("Too many open files") &&
                                    Catch::Contains("ulimit -n") && Catch::Contains("LimitNOFILE"));
  CHECK(fx.open());  // and nothing stays broken once descriptors are free again
}
