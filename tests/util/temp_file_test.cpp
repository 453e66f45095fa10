// TempFile (the one temp-then-rename writer, and write_file_atomic over it) and FileLock.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include "kernelhub/util/file_lock.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::util;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), {}));
}

}  // namespace

TEST_CASE("a TempFile dropped before commit leaves nothing behind") {
  testing::TempDir tmp;
  {
    auto temp = TempFile::create(tmp.path(), ".x.");
    REQUIRE(temp);
    REQUIRE(temp->write_all("half", 4));
    CHECK(entries(tmp.path()) == 1);  // the temp exists while it is written
  }
  CHECK(entries(tmp.path()) == 0);
}

TEST_CASE("a committed TempFile is the destination, with the mode asked for") {
  testing::TempDir tmp;
  const fs::path dest = tmp.path() / "ref";
  {
    auto temp = TempFile::create(tmp.path(), ".tmp-");
    REQUIRE(temp);
    REQUIRE(temp->write_all("abc\n", 4));
    REQUIRE(temp->commit(dest, 0444));
  }
  CHECK(slurp(dest) == "abc\n");
  struct stat st {};
  REQUIRE(::stat(dest.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0444);
  CHECK(entries(tmp.path()) == 1);  // the temp was renamed, not copied
}

TEST_CASE("write_file_atomic replaces a file whole and leaves no temp") {
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "state.json";
  REQUIRE(write_file_atomic(path, "old"));
  REQUIRE(write_file_atomic(path, "new content", 0644, Durability::none));
  CHECK(slurp(path) == "new content");
  CHECK(entries(tmp.path()) == 1);
}

TEST_CASE("a TempFile in a missing folder is an io error naming the path") {
  testing::TempDir tmp;
  auto temp = TempFile::create(tmp.path() / "missing", ".x.");
  REQUIRE_FALSE(temp);
  CHECK(temp.error().code == ErrorCode::io);
  CHECK(temp.error().message.find("missing") != std::string::npos);
}

TEST_CASE("FileLock excludes a second holder until it is released") {
  testing::TempDir tmp;
  const fs::path path = tmp.path() / "a.lock";
  {
    auto held = FileLock::acquire(path, 0664);
    REQUIRE(held);
    // flock belongs to the open file description: a second open in this process conflicts.
    CHECK_FALSE(FileLock::try_acquire(path, /*create=*/false).has_value());
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0664);  // set whatever the umask
  }
  CHECK(FileLock::try_acquire(path, /*create=*/false).has_value());
  CHECK_FALSE(FileLock::try_acquire(tmp.path() / "absent.lock", /*create=*/false).has_value());
  CHECK(FileLock::try_acquire(tmp.path() / "made.lock", /*create=*/true).has_value());
}
