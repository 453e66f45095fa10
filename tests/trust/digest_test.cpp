#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include "kernelhub/trust/digest.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::trust;

// Vectors from `printf ... | git hash-object --stdin`, sha256sum and Python's base64.
TEST_CASE("git blob sha1 matches git hash-object", "[trust][digest]") {
  CHECK(git_blob_sha1_hex("") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  CHECK(git_blob_sha1_hex("hello world\n") == "3b18e512dba79e4c8300dd08aeb37f8e728b8dad");
  CHECK(git_blob_sha1_hex("what is up, doc?") == "bd9dbf5aae1a3862dd1526723246b20206e5fc37");
}

TEST_CASE("sha256 and sha1 match known vectors, streamed in pieces", "[trust][digest]") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 streamed;
  streamed.update("hello ");
  streamed.update("world\n");
  CHECK(streamed.final_hex() == "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447");
  // final resets: the same object hashes again from scratch
  streamed.update("abc");
  CHECK(streamed.final_hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha1 sha1;
  sha1.update("abc");
  CHECK(sha1.final_hex() == "a9993e364706816aba3e25717850c26c9cd0d89d");
  GitBlobSha1 blob(12);
  blob.update("hello ");
  blob.update("world\n");
  CHECK(blob.final_hex() == "3b18e512dba79e4c8300dd08aeb37f8e728b8dad");
}

TEST_CASE("base64 encodes and decodes standard base64 with padding", "[trust][digest]") {
  Sha256 h;
  h.update("abc");
  CHECK(h.final_base64() == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
  const std::string f = "f", fo = "fo", foo = "foo";
  auto bytes = [](const std::string& s) { return std::vector<unsigned char>(s.begin(), s.end()); };
  CHECK(to_base64(bytes(f)) == "Zg==");
  CHECK(to_base64(bytes(fo)) == "Zm8=");
  CHECK(to_base64(bytes(foo)) == "Zm9v");
  CHECK(*from_base64("Zg==") == bytes(f));
  CHECK(*from_base64("Zm8=") == bytes(fo));
  CHECK(*base64_to_hex("ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  for (const char* bad : {"Zg=", "Z===", "Zg=A", "Zm9v!", "Zm-v", "=Zm9"}) {
    INFO(bad);
    auto r = from_base64(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::malformed_response);
  }
}

TEST_CASE("file and fd hashing read the whole file", "[trust][digest]") {
  testing::TempDir dir;
  const auto path = dir.path() / "blob";
  std::string content(200'000, 'x');  // several read buffers
  content += "tail";
  std::ofstream(path, std::ios::binary) << content;
  CHECK(*sha256_file_hex(path) == sha256_hex(content));
  CHECK(*git_blob_sha1_file_hex(path) == git_blob_sha1_hex(content));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  ::lseek(fd, 100, SEEK_SET);  // fd hashing starts at 0 regardless of the offset
  CHECK(*sha256_fd_hex(fd) == sha256_hex(content));
  ::close(fd);
  auto missing = sha256_file_hex(dir.path() / "nope");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ErrorCode::io);
  CHECK(missing.error().message.find("nope") != std::string::npos);
}

TEST_CASE("is_lower_hex checks length and alphabet", "[trust][digest]") {
  CHECK(is_lower_hex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", 40));
  CHECK_FALSE(is_lower_hex("E69DE29BB2D1D6434B8B29AE775AD8C2E48C5391", 40));
  CHECK_FALSE(is_lower_hex("e69de29bb2d1d6434b8b29ae775ad8c2e48c539", 40));
  CHECK_FALSE(is_lower_hex("../../../../../../../../../../../etc/pas", 40));
}
