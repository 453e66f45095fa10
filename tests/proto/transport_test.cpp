// FrameReader/send_frame over real socketpairs: truncated streams, oversized headers,
// fds passed with SCM_RIGHTS, unannounced fds closed, timeouts; unix socket helpers.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <catch2/catch.hpp>

#include "kernelhub/proto/transport.hpp"
#include "proto/proto_test_support.hpp"
#include "support/open_file_limit.hpp"
#include "support/process.hpp"

using namespace kernelhub;
using namespace kernelhub::proto;
using namespace kernelhub::proto::testing;
using nlohmann::json;

namespace {

struct SocketPair {
  UniqueFd a, b;
  SocketPair() {
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    a.reset(fds[0]);
    b.reset(fds[1]);
  }
};

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    REQUIRE(n > 0);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::size_t open_fd_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
    ++n;
  return n;
}

ino_t inode_of(int fd) {
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("every truncated prefix over a socket gives frames then EOF or truncated_frame",
          "[proto][transport][truncation]") {
  const auto frames = recorded_exchange();
  const auto rec = record(frames);
  for (std::size_t prefix = 0; prefix <= rec.bytes.size(); ++prefix) {
    SocketPair pair;
    write_all(pair.a.get(), std::string_view(rec.bytes).substr(0, prefix));
    pair.a.reset();  // the writer goes away after the prefix
    FrameReader reader(pair.b.get());
    const std::size_t whole = complete_frames(rec, prefix);
    INFO("prefix " << prefix);
    for (std::size_t i = 0; i < whole; ++i) {
      auto frame = reader.read(std::chrono::seconds(5));
      REQUIRE(frame);
      REQUIRE(frame->has_value());
      CHECK((*frame)->message == frames[i]);
    }
    auto last = reader.read(std::chrono::seconds(5));
    const bool at_boundary = prefix == 0 || (whole > 0 && rec.frame_ends[whole - 1] == prefix);
    if (at_boundary) {
      INFO((last ? std::string("ok") : last.error().message));
      REQUIRE(last);
      CHECK_FALSE(last->has_value());
    } else {
      REQUIRE_FALSE(last);
      CHECK(last.error().code == ErrorCode::truncated_frame);
    }
  }
}

TEST_CASE("an oversized header is refused without reading the payload",
          "[proto][transport][limits]") {
  SocketPair pair;
  const std::string payload = "PAYLOAD-NOT-READ";
  write_all(pair.a.get(), std::string("\x00\x10\x00\x01", 4) + payload);  // 1 MiB + 1
  FrameReader reader(pair.b.get());
  auto refused = reader.read(std::chrono::seconds(5));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == ErrorCode::frame_too_large);
  char rest[64];
  ssize_t n = ::recv(pair.b.get(), rest, sizeof rest, MSG_DONTWAIT);
  REQUIRE(n == static_cast<ssize_t>(payload.size()));
  CHECK(std::string(rest, static_cast<std::size_t>(n)) == payload);
}

TEST_CASE("malformed frames over a socket are malformed_frame", "[proto][transport][malformed]") {
  SocketPair pair;
  write_all(pair.a.get(), std::string("\0\0\0\x05[1,2]", 9));
  FrameReader reader(pair.b.get());
  auto bad = reader.read(std::chrono::seconds(5));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::malformed_frame);
}

TEST_CASE("fds sent with fetched arrive and refer to the same files", "[proto][transport][fds]") {
  kernelhub::testing::TempDir dir;
  std::vector<UniqueFd> files;
  std::vector<int> raw;
  for (int i = 0; i < 3; ++i) {
    auto path = dir.path() / ("blob" + std::to_string(i));
    std::ofstream(path) << "content " << i;
    files.emplace_back(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    REQUIRE(files.back());
    raw.push_back(files.back().get());
  }
  SocketPair pair;
  auto fetched = load_golden("fetched");
  // Two frames back to back, fds only on the second: each frame gets exactly its own fds.
  REQUIRE(send_frame(pair.a.get(), load_golden("progress")));
  REQUIRE(send_frame(pair.a.get(), fetched, raw));
  FrameReader reader(pair.b.get());
  auto progress = reader.read(std::chrono::seconds(5));
  REQUIRE(progress);
  REQUIRE(progress->has_value());
  CHECK((*progress)->fds.empty());
  auto got = reader.read(std::chrono::seconds(5));
  REQUIRE(got);
  REQUIRE(got->has_value());
  CHECK((*got)->message == fetched);
  REQUIRE((*got)->fds.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK((*got)->fds[i].get() != raw[i]);
    CHECK(inode_of((*got)->fds[i].get()) == inode_of(raw[i]));
    CHECK((::fcntl((*got)->fds[i].get(), F_GETFD) & FD_CLOEXEC) != 0);
  }
}

TEST_CASE("fds that arrive at the open-file limit say which limit to raise",
          "[proto][transport][fds]") {
  SocketPair pair;
  UniqueFd file(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  REQUIRE(file);
  const std::array<int, 2> raw{file.get(), file.get()};
  REQUIRE(send_frame(pair.a.get(), load_golden("fetched"), raw));
  FrameReader reader(pair.b.get());
  Result<std::optional<ReceivedFrame>> got = fail(ErrorCode::internal, "not read");
  bool reached = false;
  {
    const kernelhub::testing::OpenFileLimit limit;
    reached = limit.reached();
    got = reader.read(std::chrono::seconds(5));
  }
  REQUIRE(reached);  // the fault: no descriptor left for the two that come
  REQUIRE_FALSE(got);
  CHECK(got.error().code == ErrorCode::io);
  CHECK_THAT(got.error().message, Catch::Contains("dropped") && Catch::Contains("ulimit -n") &&
                                      !Catch::Contains("more than"));
}

TEST_CASE("fds on a frame that does not announce them are closed", "[proto][transport][fds]") {
  SocketPair pair;
  UniqueFd file(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  REQUIRE(file);
  const std::array<int, 2> raw{file.get(), file.get()};
  const std::size_t before = open_fd_count();
  REQUIRE(send_frame(pair.a.get(), load_golden("status_reply"), raw));
  FrameReader reader(pair.b.get());
  auto got = reader.read(std::chrono::seconds(5));
  REQUIRE(got);
  REQUIRE(got->has_value());
  CHECK((*got)->fds.empty());
  CHECK(open_fd_count() == before);
}

TEST_CASE("fds of a frame refused as malformed do not leak", "[proto][transport][fds]") {
  SocketPair pair;
  UniqueFd file(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  const int raw = file.get();
  const std::size_t before = open_fd_count();
  msghdr msg{};
  std::string bytes("\0\0\0\x02[]", 6);
  iovec iov{bytes.data(), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &raw, sizeof raw);
  REQUIRE(::sendmsg(pair.a.get(), &msg, 0) == static_cast<ssize_t>(bytes.size()));
  FrameReader reader(pair.b.get());
  auto bad = reader.read(std::chrono::seconds(5));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == ErrorCode::malformed_frame);
  CHECK(open_fd_count() == before);
}

TEST_CASE("read times out when no whole frame arrives, and resumes later",
          "[proto][transport][timeout]") {
  SocketPair pair;
  const auto frame = *encode_frame(load_golden("status_request"));
  write_all(pair.a.get(), frame.substr(0, 6));
  FrameReader reader(pair.b.get());
  auto slow = reader.read(std::chrono::milliseconds(50));
  REQUIRE_FALSE(slow);
  CHECK(slow.error().code == ErrorCode::timeout);
  write_all(pair.a.get(), frame.substr(6));
  auto done = reader.read(std::chrono::seconds(5));
  REQUIRE(done);
  REQUIRE(done->has_value());
  CHECK((*done)->message == load_golden("status_request"));
}

TEST_CASE("sending to a closed peer is a network error, not SIGPIPE", "[proto][transport]") {
  SocketPair pair;
  pair.b.reset();
  auto sent = send_frame(pair.a.get(), load_golden("status_request"));
  REQUIRE_FALSE(sent);
  CHECK(sent.error().code == ErrorCode::network);
  const std::vector<int> too_many(kMaxFdsPerFrame + 1, 0);
  CHECK(send_frame(pair.a.get(), load_golden("fetched"), too_many).error().code ==
        ErrorCode::invalid_argument);
}

TEST_CASE("large frames cross the socket whole", "[proto][transport]") {
  SocketPair pair;
  json big{{"type", "ls"}, {"id", 1}, {"repos", json::array()}};
  for (int i = 0; i < 5000; ++i)
    big["repos"].push_back({{"repo", "org/r" + std::to_string(i)}, {"pad", std::string(100, 'p')}});
  Result<void> sent;  // checked here: Catch2 asserts on the main thread only
  std::thread writer([&] { sent = send_frame(pair.a.get(), big); });
  FrameReader reader(pair.b.get());
  auto got = reader.read(std::chrono::seconds(10));
  writer.join();
  REQUIRE(sent);
  REQUIRE(got);
  REQUIRE(got->has_value());
  CHECK((*got)->message == big);
}

TEST_CASE("listen_unix and connect_unix by path", "[proto][transport][unix]") {
  kernelhub::testing::TempDir dir;
  const auto path = dir.path() / "kh.sock";
  CHECK(connect_unix(path).error().code == ErrorCode::network);  // nobody there
  {
    auto listener = listen_unix(path, 4);
    REQUIRE(listener);
    auto client = connect_unix(path);
    REQUIRE(client);
    UniqueFd server(::accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC));
    REQUIRE(server);
    REQUIRE(send_frame(client->get(), load_golden("hello_client")));
    FrameReader reader(server.get());
    auto hello = reader.read(std::chrono::seconds(5));
    REQUIRE(hello);
    CHECK((*hello)->message == load_golden("hello_client"));
    // A socket someone still listens on is not stale.
    CHECK(listen_unix(path, 4).error().code == ErrorCode::io);
  }
  // The listener is gone; its socket file is stale and gets replaced.
  REQUIRE(std::filesystem::is_socket(path));
  CHECK(connect_unix(path).error().code == ErrorCode::network);
  CHECK(listen_unix(path, 4));
  // Anything else at the path is never removed.
  const auto regular = dir.path() / "not-a-socket";
  std::ofstream(regular) << "keep me";
  CHECK(listen_unix(regular, 4).error().code == ErrorCode::io);
  CHECK(std::filesystem::file_size(regular) == 7);
  CHECK(connect_unix(std::string(200, 'x')).error().code == ErrorCode::invalid_argument);
}
