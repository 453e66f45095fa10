#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "kernelhub/cache/blob_writer.hpp"
#include "kernelhub/trust/digest.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::cache;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    out.push_back(entry.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kContent = "ELF\x7f pretend this is a kernel .so, several chunks long";

ExpectedBlob lfs_blob(const std::string& content) {
  return {trust::sha256_hex(content), DigestKind::sha256, content.size()};
}

// Writes `content` in 7-byte pieces (short, uneven writes).
void write_chunks(BlobWriter& w, const std::string& content) {
  for (std::size_t i = 0; i < content.size(); i += 7) {
    REQUIRE(w.write(content.data() + i, std::min<std::size_t>(7, content.size() - i)));
  }
}

// The temp file the writer is using (exactly one *.incomplete).
fs::path the_temp(const fs::path& dir) {
  std::vector<fs::path> temps;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".incomplete") temps.push_back(e.path());
  }
  REQUIRE(temps.size() == 1);
  return temps.front();
}

}  // namespace

TEST_CASE("a good LFS blob is written under a temp name and committed as blobs/<sha256>",
          "[cache][blob]") {
  testing::TempDir dir;
  const mode_t old_umask = ::umask(022);
  const auto expected = lfs_blob(kContent);
  {
    auto w = BlobWriter::create(dir.path(), expected);
    REQUIRE(w);
    write_chunks(*w, kContent);
    CHECK(w->bytes_written() == kContent.size());
    const auto temp = the_temp(dir.path()).filename().string();
    // <etag>.<8 hex>.incomplete
    CHECK(temp.size() == expected.etag.size() + 1 + 8 + 11);
    CHECK(temp.rfind(expected.etag + ".", 0) == 0);
    CHECK(trust::is_lower_hex(temp.substr(expected.etag.size() + 1, 8), 8));
    CHECK_FALSE(fs::exists(dir.path() / expected.etag));
    REQUIRE(w->finish());
    CHECK(w->sha256_hex() == expected.etag);
    auto path = w->commit();
    REQUIRE(path);
    CHECK(*path == dir.path() / expected.etag);
  }
  ::umask(old_umask);
  CHECK(names_in(dir.path()) == std::vector<std::string>{expected.etag});
  CHECK(read_all(dir.path() / expected.etag) == kContent);
  struct stat st {};
  REQUIRE(::stat((dir.path() / expected.etag).c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0644);
}

TEST_CASE("a published_mode is applied before the blob becomes visible", "[cache][blob]") {
  testing::TempDir dir;
  BlobWriterOptions options;
  options.published_mode = 0444;
  auto w = BlobWriter::create(dir.path(), lfs_blob(kContent), options);
  REQUIRE(w);
  write_chunks(*w, kContent);
  REQUIRE(w->finish());
  auto path = w->commit();
  REQUIRE(path);
  struct stat st {};
  REQUIRE(::stat(path->c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0444);
}

TEST_CASE("the blob mode honours the umask", "[cache][blob]") {
  testing::TempDir dir;
  const mode_t old_umask = ::umask(077);
  auto w = BlobWriter::create(dir.path(), lfs_blob(kContent));
  REQUIRE(w);
  write_chunks(*w, kContent);
  REQUIRE(w->finish());
  auto path = w->commit();
  ::umask(old_umask);
  REQUIRE(path);
  struct stat st {};
  REQUIRE(::stat(path->c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
}

TEST_CASE("a git-tracked blob is verified by its git blob sha1", "[cache][blob]") {
  testing::TempDir dir;
  const std::string content = "hello world\n";
  ExpectedBlob expected{"3b18e512dba79e4c8300dd08aeb37f8e728b8dad", DigestKind::git_sha1,
                        content.size()};
  auto w = BlobWriter::create(dir.path(), expected);
  REQUIRE(w);
  write_chunks(*w, content);
  REQUIRE(w->finish());
  CHECK(w->sha256_hex() == trust::sha256_hex(content));  // sha256 is always available
  REQUIRE(w->commit());
  CHECK(read_all(dir.path() / expected.etag) == content);
}

TEST_CASE("one flipped byte is a hash_mismatch and nothing is published", "[cache][blob]") {
  testing::TempDir dir;
  const auto expected = lfs_blob(kContent);
  std::string corrupt = kContent;
  corrupt[10] ^= 0x01;
  {
    auto w = BlobWriter::create(dir.path(), expected);
    REQUIRE(w);
    write_chunks(*w, corrupt);
    auto r = w->finish();
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::hash_mismatch);
    CHECK(r.error().message.find(expected.etag) != std::string::npos);
    CHECK_FALSE(w->commit());
    CHECK(names_in(dir.path()).empty());  // temp removed at once
  }
  CHECK_FALSE(fs::exists(dir.path() / expected.etag));
  CHECK(names_in(dir.path()).empty());
}

TEST_CASE("writing past the expected size is too_large and the temp is removed", "[cache][blob]") {
  testing::TempDir dir;
  {
    auto w = BlobWriter::create(dir.path(), lfs_blob(kContent));
    REQUIRE(w);
    write_chunks(*w, kContent);
    auto r = w->write("x", 1);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::too_large);
    CHECK(w->bytes_written() == kContent.size());
    CHECK(fs::file_size(the_temp(dir.path())) == kContent.size());  // disk use stays bounded
  }
  CHECK(names_in(dir.path()).empty());
}

TEST_CASE("a short body is a size_mismatch", "[cache][blob]") {
  testing::TempDir dir;
  auto w = BlobWriter::create(dir.path(), lfs_blob(kContent));
  REQUIRE(w);
  REQUIRE(w->write(kContent.data(), kContent.size() - 1));
  auto r = w->finish();
  REQUIRE_FALSE(r);
  CHECK(r.error().code == ErrorCode::size_mismatch);
  CHECK(names_in(dir.path()).empty());
}

TEST_CASE("after a resume finish re-hashes the bytes on disk", "[cache][blob]") {
  testing::TempDir dir;
  const auto expected = lfs_blob(kContent);
  const std::size_t half = kContent.size() / 2;

  SECTION("a clean resume verifies") {
    auto w = BlobWriter::create(dir.path(), expected);
    REQUIRE(w);
    REQUIRE(w->write(kContent.data(), half));
    w->mark_resumed();
    REQUIRE(w->write(kContent.data() + half, kContent.size() - half));
    REQUIRE(w->finish());
    CHECK(w->sha256_hex() == expected.etag);
    REQUIRE(w->commit());
    CHECK(read_all(dir.path() / expected.etag) == kContent);
  }
  SECTION("bytes that changed on disk are caught only by the re-hash") {
    for (const bool resumed : {false, true}) {
      auto w = BlobWriter::create(dir.path(), expected);
      REQUIRE(w);
      write_chunks(*w, kContent);
      // Someone else's bytes in the partial file: the incremental hash never saw them.
      const int fd = ::open(the_temp(dir.path()).c_str(), O_WRONLY | O_CLOEXEC);
      REQUIRE(fd >= 0);
      REQUIRE(::pwrite(fd, "XXXX", 4, 0) == 4);
      ::close(fd);
      if (resumed) w->mark_resumed();
      auto r = w->finish();
      INFO("resumed=" << resumed);
      CHECK(static_cast<bool>(r) == !resumed);
      if (!r) CHECK(r.error().code == ErrorCode::hash_mismatch);
    }
    CHECK(names_in(dir.path()).empty());
  }
}

TEST_CASE("restart truncates and starts the hash over", "[cache][blob]") {
  testing::TempDir dir;
  auto w = BlobWriter::create(dir.path(), lfs_blob(kContent));
  REQUIRE(w);
  REQUIRE(w->write("garbage", 7));
  REQUIRE(w->restart());
  CHECK(w->bytes_written() == 0);
  write_chunks(*w, kContent);
  REQUIRE(w->finish());
  REQUIRE(w->commit());
}

TEST_CASE("an etag that is not a hex digest is refused before any file is created",
          "[cache][blob]") {
  testing::TempDir dir;
  for (const std::string& etag :
       std::vector<std::string>{"../../etc/passwd", std::string(64, 'A'), std::string(40, 'a')}) {
    auto w = BlobWriter::create(dir.path(), ExpectedBlob{etag, DigestKind::sha256, 1});
    REQUIRE_FALSE(w);
    CHECK(w.error().code == ErrorCode::malformed_response);
  }
  CHECK(names_in(dir.path()).empty());
}

namespace {

// Bigger than the trailing hasher's read chunk and wake batch, not a multiple of either.
std::string big_content() {
  std::string s((3 << 20) + 12345, '\0');
  std::uint32_t x = 2463534242u;
  for (char& c : s) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    c = static_cast<char>(x);
  }
  return s;
}

// Uneven pieces, like curl callbacks.
void write_pieces(BlobWriter& w, const std::string& content, std::size_t from = 0) {
  std::size_t piece = 1;
  for (std::size_t i = from; i < content.size(); i += piece) {
    piece = std::min<std::size_t>(content.size() - i, 1 + (i * 7919) % 70000);
    REQUIRE(w.write(content.data() + i, piece));
  }
}

const BlobWriterOptions kTrailing{0};         // every blob hashed on the trailing thread
const BlobWriterOptions kInline{UINT64_MAX};  // never

}  // namespace

TEST_CASE("the trailing hasher gives the same digests as inline hashing",
          "[cache][blob][trailing]") {
  testing::TempDir dir;
  const std::string content = big_content();
  const std::string sha256 = trust::sha256_hex(content);
  std::string git_sha1;
  {
    trust::GitBlobSha1 h(content.size());
    h.update(content);
    git_sha1 = h.final_hex();
  }
  for (const auto& expected : {ExpectedBlob{sha256, DigestKind::sha256, content.size()},
                               ExpectedBlob{git_sha1, DigestKind::git_sha1, content.size()}}) {
    for (const auto& options : {kTrailing, kInline}) {
      INFO("kind=" << static_cast<int>(expected.kind)
                   << " trailing=" << (options.trailing_hash_min_size == 0));
      auto w = BlobWriter::create(dir.path(), expected, options);
      REQUIRE(w);
      write_pieces(*w, content);
      REQUIRE(w->finish());
      CHECK(w->sha256_hex() == sha256);
      auto path = w->commit();
      REQUIRE(path);
      CHECK(read_all(*path) == content);
      fs::remove(*path);
    }
  }
  // The default switches to the trailing thread for multi-MiB blobs, and that must verify too.
  auto w = BlobWriter::create(dir.path(), {sha256, DigestKind::sha256, content.size()}, {1 << 20});
  REQUIRE(w);
  write_pieces(*w, content);
  REQUIRE(w->finish());
  CHECK(w->sha256_hex() == sha256);
}

TEST_CASE("with the trailing hasher a corrupted byte is still a hash_mismatch",
          "[cache][blob][trailing]") {
  testing::TempDir dir;
  const std::string content = big_content();
  const auto expected =
      ExpectedBlob{trust::sha256_hex(content), DigestKind::sha256, content.size()};
  for (const std::size_t at : {std::size_t{0}, content.size() / 2, content.size() - 1}) {
    std::string corrupt = content;
    corrupt[at] ^= 0x01;
    {
      auto w = BlobWriter::create(dir.path(), expected, kTrailing);
      REQUIRE(w);
      write_pieces(*w, corrupt);
      auto r = w->finish();
      INFO("flipped byte " << at);
      REQUIRE_FALSE(r);
      CHECK(r.error().code == ErrorCode::hash_mismatch);
      CHECK_FALSE(w->commit());
    }
    CHECK(names_in(dir.path()).empty());
  }
}

TEST_CASE("with the trailing hasher a resume still re-hashes the file from disk",
          "[cache][blob][trailing]") {
  testing::TempDir dir;
  const std::string content = big_content();
  const auto expected =
      ExpectedBlob{trust::sha256_hex(content), DigestKind::sha256, content.size()};
  const std::size_t half = content.size() / 2;

  SECTION("a clean resume verifies") {
    auto w = BlobWriter::create(dir.path(), expected, kTrailing);
    REQUIRE(w);
    REQUIRE(w->write(content.data(), half));
    w->mark_resumed();
    write_pieces(*w, content, half);
    REQUIRE(w->finish());
    CHECK(w->sha256_hex() == expected.etag);
  }
  SECTION("bytes changed on disk before the resume are caught") {
    auto w = BlobWriter::create(dir.path(), expected, kTrailing);
    REQUIRE(w);
    REQUIRE(w->write(content.data(), half));
    const int fd = ::open(the_temp(dir.path()).c_str(), O_WRONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, "XXXX", 4, 1000) == 4);
    ::close(fd);
    w->mark_resumed();
    write_pieces(*w, content, half);
    auto r = w->finish();
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ErrorCode::hash_mismatch);
  }
  CHECK(names_in(dir.path()).empty());
}

TEST_CASE("with the trailing hasher restart and early destruction are clean",
          "[cache][blob][trailing]") {
  testing::TempDir dir;
  const std::string content = big_content();
  const auto expected =
      ExpectedBlob{trust::sha256_hex(content), DigestKind::sha256, content.size()};
  {
    auto w = BlobWriter::create(dir.path(), expected, kTrailing);
    REQUIRE(w);
    write_pieces(*w, std::string(content.size() / 2, 'g'));  // a body that is not ours
    REQUIRE(w->restart());
    write_pieces(*w, content);
    REQUIRE(w->finish());
    REQUIRE(w->commit());
  }
  CHECK(read_all(dir.path() / expected.etag) == content);
  fs::remove(dir.path() / expected.etag);
  {
    auto w = BlobWriter::create(dir.path(), expected, kTrailing);
    REQUIRE(w);
    REQUIRE(w->write(content.data(), content.size() / 3));
  }  // abandoned mid-download: the thread stops, the temp goes
  CHECK(names_in(dir.path()).empty());
}
