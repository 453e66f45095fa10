// util::read_small_file / open_regular_file: the one way outside files are opened. A FIFO
// must be refused without waiting for a writer, a device without reading it, and a file over
// its cap with its real size.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "kernelhub/util/read_file.hpp"
#include "support/process.hpp"

namespace fs = std::filesystem;
using kernelhub::ErrorCode;
using kernelhub::testing::TempDir;
using kernelhub::util::open_regular_file;
using kernelhub::util::read_small_file;

TEST_CASE("read_small_file reads a regular file whole, within its cap", "[trust][read_file]") {
  TempDir dir;
  const fs::path file = dir.path() / "f";
  std::ofstream(file) << "hello";
  CHECK(*read_small_file(file, 5) == "hello");
  CHECK(*read_small_file(file, 100) == "hello");
  std::ofstream(dir.path() / "empty").flush();
  CHECK(read_small_file(dir.path() / "empty", 0)->empty());
  const std::string big(100'000, 'x');
  std::ofstream(dir.path() / "big") << big;
  CHECK(*read_small_file(dir.path() / "big", big.size()) == big);
}

TEST_CASE("read_small_file refuses what is not a regular file, naming it", "[trust][read_file]") {
  TempDir dir;
  const fs::path fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const auto from_fifo = read_small_file(fifo, 100);  // returns at once: no writer needed
  REQUIRE_FALSE(from_fifo);
  CHECK(from_fifo.error().code == ErrorCode::invalid_argument);
  CHECK(from_fifo.error().message == fifo.string() + " is a FIFO, not a regular file");

  const auto zero = read_small_file("/dev/zero", 100);
  REQUIRE_FALSE(zero);
  CHECK(zero.error().message == "/dev/zero is a character device, not a regular file");
  const auto folder = open_regular_file(dir.path());
  REQUIRE_FALSE(folder);
  CHECK(folder.error().message == dir.path().string() + " is a directory, not a regular file");

  const auto missing = read_small_file(dir.path() / "none", 100);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::io);
  // A path's own bytes are shown escaped.
  const auto odd = read_small_file(dir.path() / "a\nb", 100);
  REQUIRE_FALSE(odd);
  CHECK(odd.error().message.find("a\\x0ab") != std::string::npos);
}

TEST_CASE("read_small_file reports a file over its cap with its real size", "[trust][read_file]") {
  TempDir dir;
  const fs::path file = dir.path() / "f";
  std::ofstream(file).flush();
  fs::resize_file(file, 5u << 20);
  const auto read = read_small_file(file, 4u << 20);
  REQUIRE_FALSE(read);
  CHECK(read.error().code == ErrorCode::too_large);
  CHECK(read.error().message ==
        file.string() + " is 5242880 bytes, more than the 4194304-byte limit");
  // A descriptor opened as a regular file is blocking again.
  const auto fd = open_regular_file(file);
  REQUIRE(fd);
  CHECK((::fcntl(fd->get(), F_GETFL) & O_NONBLOCK) == 0);
}
