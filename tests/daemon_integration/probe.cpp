// kh_daemon_probe: a client process for the daemon integration tests. Each mode prints one
// JSON object on stdout, so a test can run many of them at once, or as another uid (setpriv).
//   fetch SOCKET REPO VERSION VARIANT     fetch through kernelhub::client::Client (daemon only)
//                                         and hash the bytes read from each handed-out fd
//   claim-root SOCKET REPO VERSION VARIANT  raw protocol: hello and fetch that claim uid 0
//   tamper DIR                            try to modify everything under DIR; report errnos
//   hold-idle SOCKET N WAIT_S             open N connections, hello on each, print what the
//                                         daemon answered (one line), then wait up to WAIT_S for
//                                         it to close them and print when (a second line)
//   idle-client SOCKET IDLE_MS REPO VERSION VARIANT  one Client: status, idle IDLE_MS, status,
//                                         fetch (the library must reconnect on its own)
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "kernelhub/client/client.hpp"
#include "kernelhub/proto/transport.hpp"
#include "kernelhub/trust/digest.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Reads the whole file through the fd from offset 0 (pread: the fd's offset is shared).
std::string sha256_of_fd(int fd, std::uint64_t* size) {
  kernelhub::trust::Sha256 hasher;
  char buf[1 << 16];
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "read error: " + std::string(std::strerror(errno));
    if (n == 0) break;
    hasher.update(buf, static_cast<std::size_t>(n));
    offset += n;
  }
  *size = static_cast<std::uint64_t>(offset);
  return hasher.final_hex();
}

// Version `version` of `repo`, built as `variant`; nullopt when `repo` is not a repo id.
std::optional<kernelhub::fetch::Request> version_request(const std::string& repo, int version,
                                                         const std::string& variant) {
  auto id = kernelhub::trust::RepoId::parse(repo);
  if (!id) return std::nullopt;
  auto ref = kernelhub::fetch::Ref::version(version);
  auto choice = kernelhub::fetch::VariantChoice::named(variant);
  if (!ref || !choice) return std::nullopt;
  kernelhub::fetch::Request request(*id, *ref);
  request.variants = *choice;
  return request;
}

int fetch(const std::string& socket, const std::string& repo, int version,
          const std::string& variant) {
  kernelhub::client::ClientOptions options;
  options.socket = socket;
  options.require_daemon = true;
  auto env = kernelhub::util::Environment::from_process();
  auto client = kernelhub::client::Client::open(env, options);
  if (!client) {
    std::cout << json{{"ok", false},
                      {"code", kernelhub::to_string(client.error().code)},
                      {"message", client.error().message}}
              << "\n";
    return 1;
  }
  auto request = version_request(repo, version, variant);
  if (!request) return 2;
  auto got = client->fetch(*request);
  if (!got) {
    std::cout << json{{"ok", false},
                      {"code", kernelhub::to_string(got.error().code)},
                      {"message", got.error().message}}
              << "\n";
    return 1;
  }
  json files = json::object();
  if (got->fds.size() != got->manifest.files.size()) {
    std::cout << json{{"ok", false}, {"code", "fds"}, {"message", "one fd per file expected"}}
              << "\n";
    return 1;
  }
  for (std::size_t i = 0; i < got->fds.size(); ++i) {
    const auto& f = got->manifest.files[i];
    const auto& fd = got->fds[i];
    std::uint64_t size = 0;
    const int mode = ::fcntl(fd.get(), F_GETFL);
    const auto digest = sha256_of_fd(fd.get(), &size);
    files[f.path] = {{"fd_sha256", digest},
                     {"fd_size", size},
                     {"sha256", f.sha256},
                     {"size", f.size},
                     {"read_only", mode >= 0 && (mode & O_ACCMODE) == O_RDONLY}};
  }
  std::cout << json{{"ok", true},
                    {"via_daemon", got->via_daemon},
                    {"commit", got->manifest.commit},
                    {"snapshot_path", got->manifest.snapshot_path.string()},
                    {"files", files}}
            << "\n";
  return 0;
}

int claim_root(const std::string& socket, const std::string& repo, int version,
               const std::string& variant) {
  auto fd = kernelhub::proto::connect_unix(socket);
  if (!fd) return 2;
  kernelhub::proto::FrameReader reader(fd->get());
  json frames = json::array();
  // Identity claims in every place a naive daemon might look; only SO_PEERCRED may count.
  const json hello{{"type", "hello"},   {"protocol", 1}, {"capabilities", {"fds"}},
                   {"client", "probe"}, {"uid", 0},      {"gid", 0},
                   {"user", "root"}};
  const json request{{"type", "fetch"},
                     {"id", 1},
                     {"repo", repo},
                     {"version", version},
                     {"variant", variant},
                     {"uid", 0},
                     {"gid", 0},
                     {"user", "root"},
                     {"env", {{"USER", "root"}, {"SUDO_UID", "0"}, {"LOGNAME", "root"}}}};
  (void)kernelhub::proto::send_frame(fd->get(), hello);
  (void)kernelhub::proto::send_frame(fd->get(), request);
  for (int i = 0; i < 4; ++i) {
    auto frame = reader.read(std::chrono::seconds(20));
    if (!frame || !*frame) break;
    frames.push_back((*frame)->message);
  }
  std::cout << json{{"frames", frames}} << "\n";
  return 0;
}

std::string errno_name(int e) {
  switch (e) {
    case 0:
      return "ok";
    case EACCES:
      return "EACCES";
    case EPERM:
      return "EPERM";
    case EROFS:
      return "EROFS";
    default:
      return std::strerror(e);
  }
}

// Every way we know to change what the daemon hands out, applied to every entry under DIR.
int tamper(const fs::path& dir) {
  json attempts = json::array();
  auto record = [&](const std::string& op, const fs::path& path, int rc) {
    attempts.push_back(
        {{"op", op}, {"path", path.string()}, {"result", errno_name(rc == 0 ? 0 : errno)}});
  };
  std::vector<fs::path> dirs{dir};
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_symlink() || entry.is_regular_file())
      files.push_back(entry.path());
    else if (entry.is_directory())
      dirs.push_back(entry.path());
  }
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (!fs::is_symlink(f)) record("open_rdwr", f, fd < 0 ? -1 : 0);
    if (fd >= 0) ::close(fd);
    const int wfd = ::open(f.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);  // follows snapshot links
    record("open_wronly_trunc", f, wfd < 0 ? -1 : 0);
    if (wfd >= 0) ::close(wfd);
    record("chmod", f, ::chmod(f.c_str(), 0666));
    record("unlink", f, ::unlink(f.c_str()));
    record("rename", f, ::rename(f.c_str(), (f.string() + ".moved").c_str()));
    record("link", f, ::link(f.c_str(), (f.string() + ".hard").c_str()));
  }
  for (const auto& d : dirs) {
    record("symlink_in_dir", d, ::symlink("/etc/passwd", (d / "planted").c_str()));
    const int fd =
        ::open((d / "planted-file").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    record("create_in_dir", d, fd < 0 ? -1 : 0);
    if (fd >= 0) ::close(fd);
    record("mkdir_in_dir", d, ::mkdir((d / "planted-dir").c_str(), 0755));
    if (d != dir) record("rename_dir", d, ::rename(d.c_str(), (d.string() + ".moved").c_str()));
  }
  std::cout << json{{"uid", ::getuid()}, {"euid", ::geteuid()}, {"attempts", attempts}} << "\n";
  return 0;
}

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

int hold_idle(const std::string& socket, int count, int wait_s) {
  rlimit limit{};  // one fd per connection: lift the soft limit to the hard one
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  struct Conn {
    kernelhub::UniqueFd fd;
    std::unique_ptr<kernelhub::proto::FrameReader> reader;
    Clock::time_point since;  // when the daemon answered hello
    bool open = false;        // answered hello; not closed yet
    bool closed = false;
    double closed_after_ms = 0;
    json last_frame;
  };
  std::vector<Conn> conns;
  int connected = 0, accepted = 0, refused = 0, other = 0;
  json refusal;
  const json hello{{"type", "hello"}, {"protocol", 1}, {"capabilities", {"fds"}}};
  for (int i = 0; i < count; ++i) {
    auto fd = kernelhub::proto::connect_unix(socket);
    if (!fd) continue;
    ++connected;
    Conn c;
    c.fd = std::move(*fd);
    c.reader = std::make_unique<kernelhub::proto::FrameReader>(c.fd.get());
    (void)kernelhub::proto::send_frame(c.fd.get(), hello);
    auto frame = c.reader->read(std::chrono::seconds(10));
    const json message = frame && *frame ? (*frame)->message : json(nullptr);
    if (message.is_object() && message.value("type", "") == "hello") {
      ++accepted;
      c.open = true;
      c.since = Clock::now();
    } else if (message.is_object() && message.value("type", "") == "error") {
      ++refused;
      refusal = message;
    } else {
      ++other;
    }
    conns.push_back(std::move(c));
  }
  std::cout << json{{"phase", "open"},    {"connected", connected}, {"accepted", accepted},
                    {"refused", refused}, {"other", other},         {"refusal", refusal}}
            << std::endl;

  // Wait for the daemon to close the accepted ones; each read is a frame or the end.
  const auto deadline = Clock::now() + std::chrono::seconds(wait_s);
  int open = accepted;
  while (open > 0 && Clock::now() < deadline) {
    std::vector<pollfd> polls;
    std::vector<Conn*> owners;
    for (auto& c : conns) {
      if (!c.open) continue;
      polls.push_back({c.fd.get(), POLLIN, 0});
      owners.push_back(&c);
    }
    if (::poll(polls.data(), polls.size(), 100) <= 0) continue;
    for (std::size_t i = 0; i < polls.size(); ++i) {
      if (polls[i].revents == 0) continue;
      Conn& c = *owners[i];
      auto frame = c.reader->read(std::chrono::seconds(1));
      if (frame && *frame) {
        c.last_frame = (*frame)->message;
        continue;  // the end of stream comes next
      }
      c.open = false;
      c.closed = true;
      c.closed_after_ms = ms_since(c.since);
      --open;
    }
  }
  int closed = 0, idle_errors = 0;
  double min_ms = 1e12, max_ms = 0;
  json sample;
  for (const auto& c : conns) {
    if (!c.closed) continue;
    ++closed;
    min_ms = std::min(min_ms, c.closed_after_ms);
    max_ms = std::max(max_ms, c.closed_after_ms);
    if (c.last_frame.is_object() && c.last_frame.value("code", "") == "timeout" &&
        !c.last_frame.contains("id"))
      ++idle_errors;
    sample = c.last_frame;
  }
  std::cout << json{{"phase", "closed"},  {"closed", closed},
                    {"still_open", open}, {"idle_errors", idle_errors},
                    {"min_ms", min_ms},   {"max_ms", max_ms},
                    {"sample", sample}}
            << std::endl;
  return 0;
}

int idle_client(const std::string& socket, int idle_ms, const std::string& repo, int version,
                const std::string& variant) {
  kernelhub::client::ClientOptions options;
  options.socket = socket;
  options.require_daemon = true;
  auto client =
      kernelhub::client::Client::open(kernelhub::util::Environment::from_process(), options);
  if (!client) return 2;
  json out;
  auto first = client->status();
  out["first"] = first ? *first : json{{"error", first.error().message}};
  std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
  auto second = client->status();
  out["second"] = second ? *second : json{{"error", second.error().message}};
  auto request = version_request(repo, version, variant);
  if (!request) return 2;
  auto got = client->fetch(*request);
  out["fetch"] = got ? json{{"ok", true}, {"files", got->manifest.files.size()}}
                     : json{{"ok", false},
                            {"code", kernelhub::to_string(got.error().code)},
                            {"message", got.error().message}};
  std::cout << out << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if ((mode == "fetch" || mode == "claim-root") && argc == 6) {
    const int version = std::stoi(argv[4]);
    return mode == "fetch" ? fetch(argv[2], argv[3], version, argv[5])
                           : claim_root(argv[2], argv[3], version, argv[5]);
  }
  if (mode == "tamper" && argc == 3) return tamper(argv[2]);
  if (mode == "hold-idle" && argc == 5)
    return hold_idle(argv[2], std::stoi(argv[3]), std::stoi(argv[4]));
  if (mode == "idle-client" && argc == 7)
    return idle_client(argv[2], std::stoi(argv[3]), argv[4], std::stoi(argv[5]), argv[6]);
  std::cerr << "usage: kh_daemon_probe fetch|claim-root SOCKET REPO VERSION VARIANT | tamper DIR"
               " | hold-idle SOCKET N WAIT_S | idle-client SOCKET IDLE_MS REPO VERSION VARIANT\n";
  return 2;
}
