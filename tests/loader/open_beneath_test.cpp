// trust::open_beneath (moved down from the client for the loader's local builds).
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "kernelhub/trust/open_beneath.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace kernelhub;

TEST_CASE("open_beneath opens nested paths and refuses symlinks and escapes") {
  testing::TempDir temp;
  fs::create_directories(temp.path() / "root" / "sub");
  std::ofstream(temp.path() / "root" / "sub" / "file.txt") << "inside";
  std::ofstream(temp.path() / "outside.txt") << "outside";
  fs::create_symlink(temp.path() / "outside.txt", temp.path() / "root" / "link.txt");
  fs::create_directory_symlink(temp.path() / "root" / "sub", temp.path() / "root" / "dirlink");
  const UniqueFd root(::open((temp.path() / "root").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  REQUIRE(root);

  auto file = open_beneath(root.get(), "sub/file.txt");
  REQUIRE(file);
  char buffer[16] = {};
  CHECK(::read(file->get(), buffer, sizeof buffer) == 6);
  CHECK(std::string(buffer) == "inside");
  CHECK((::fcntl(file->get(), F_GETFD) & FD_CLOEXEC) != 0);

  auto dir = open_beneath(root.get(), "sub", O_RDONLY | O_DIRECTORY);
  CHECK(dir);

  for (const char* refused : {"link.txt", "dirlink/file.txt"}) {
    INFO(refused);
    const auto result = open_beneath(root.get(), refused);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::unsafe_path);
  }
  for (const char* hostile : {"../outside.txt", "/etc/passwd", "", "sub/../sub/file.txt"}) {
    INFO(hostile);
    const auto result = open_beneath(root.get(), hostile);
    REQUIRE_FALSE(result);
    CHECK(result.error().code == ErrorCode::unsafe_path);
  }
  const auto missing = open_beneath(root.get(), "sub/none.txt");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::io);
}
