#include "daemon_integration/harness.hpp"

#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "kernelhub/trust/digest.hpp"

namespace kernelhub::testing {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string hash_file(const fs::path& path, bool git_sha1) {
  auto digest = git_sha1 ? trust::git_blob_sha1_file_hex(path) : trust::sha256_file_hex(path);
  if (!digest) throw std::runtime_error(digest.error().message);
  return *digest;
}

}  // namespace

Child::Child(const std::vector<std::string>& argv, const EnvOverrides& env, const fs::path& log) {
  SpawnActions actions;
  posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(actions.get(), 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(actions.get(), 1, 2);
  pid_ = spawn_process(argv, env, actions);
}

Child::~Child() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    (void)wait(std::chrono::seconds(10));
  }
}

void Child::signal(int sig) const { ::kill(pid_, sig); }

std::optional<int> Child::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!status_) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

bool Child::running() { return !wait(std::chrono::milliseconds(0)).has_value(); }

bool wait_for_listener(const fs::path& socket, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto fd = proto::connect_unix(socket)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

bool wait_for_path(const fs::path& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::error_code ec;
  while (!fs::exists(fs::symlink_status(path, ec))) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

DaemonProcess::DaemonProcess(DaemonConfig config, bool wait_ready) : config_(std::move(config)) {
  if (config_.log.empty()) config_.log = config_.socket.parent_path() / "kernelhubd.log";
  std::vector<std::string> argv = config_.wrapper;
  argv.insert(argv.end(), {kKernelhubd, "--socket", config_.socket.string(), "--cache-dir",
                           config_.cache.string()});
  if (config_.policy) argv.insert(argv.end(), {"--policy", config_.policy->string()});
  argv.insert(argv.end(), config_.extra_args.begin(), config_.extra_args.end());
  EnvOverrides env{{"HF_ENDPOINT", config_.hf_endpoint},
                   {"LISTEN_FDS", ""},
                   {"LISTEN_PID", ""},
                   {"LISTEN_FDNAMES", ""},
                   {"NOTIFY_SOCKET", ""},
                   {"KERNELHUB_SOCKET", ""},
                   {"KERNELHUB_POLICY", ""},
                   {"DIFFUSERS_TRUST_REMOTE_KERNELS", ""},
                   {"DIFFUSERS_DISABLE_REMOTE_CODE", ""},
                   {"HF_HUB_OFFLINE", ""},
                   {"HF_TOKEN", ""}};
  for (const auto& [k, v] : config_.env) env[k] = v;
  child_ = std::make_unique<Child>(argv, env, config_.log);
  if (wait_ready && !wait_for_listener(config_.socket)) {
    throw std::runtime_error("kernelhubd did not listen on " + config_.socket.string() + ":\n" +
                             log());
  }
}

DaemonProcess::~DaemonProcess() {
  try {
    if (child_->running()) (void)stop();
  } catch (const std::exception&) {
    // the Child destructor SIGKILLs what is left
  }
}

int DaemonProcess::stop() {
  pid_t target = child_->pid();
  if (!config_.wrapper.empty()) {
    try {
      target = daemon_pid(config_.socket);
    } catch (const std::exception&) {
      // not answering: signal the wrapper
    }
  }
  ::kill(target, SIGTERM);
  auto status = child_->wait(std::chrono::seconds(20));
  if (!status) throw std::runtime_error("kernelhubd ignored SIGTERM for 20 s");
  return *status;
}

std::string DaemonProcess::log() const {
  std::ifstream in(config_.log);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

WireClient::WireClient(const fs::path& socket) {
  auto fd = proto::connect_unix(socket);
  if (!fd) throw std::runtime_error("connect " + socket.string() + ": " + fd.error().message);
  fd_ = std::move(*fd);
  reader_.emplace(fd_.get());
}

json WireClient::hello(const std::vector<std::string>& capabilities) {
  send({{"type", "hello"},
        {"protocol", 1},
        {"capabilities", capabilities},
        {"client", "kh-daemon-tests"}});
  auto frame = read();
  if (!frame) throw std::runtime_error("daemon closed the connection instead of answering hello");
  return frame->message;
}

void WireClient::send(const json& frame) {
  auto sent = proto::send_frame(fd_.get(), frame);
  if (!sent) throw std::runtime_error("send: " + sent.error().message);
}

void WireClient::send_raw(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("send: ") + std::strerror(errno));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::optional<proto::ReceivedFrame> WireClient::read(std::chrono::milliseconds timeout) {
  auto frame = reader_->read(timeout);
  if (!frame)
    throw std::runtime_error("read: " + std::string(to_string(frame.error().code)) + ": " +
                             frame.error().message);
  if (!*frame) return std::nullopt;
  return std::move(**frame);
}

bool WireClient::hung_up(std::chrono::milliseconds timeout) {
  auto frame = reader_->read(timeout);
  if (!frame) {
    // Only a reset or a broken pipe (network) is the peer hanging up; anything else fails.
    if (frame.error().code != ErrorCode::network)
      throw std::runtime_error("hung_up: " + frame.error().message);
    return true;
  }
  return !*frame;
}

std::uint64_t WireClient::send_fetch(const std::string& repo, int version, const json& env,
                                     const json& extra) {
  const auto id = next_id_++;
  json request{{"type", "fetch"},     {"id", id},  {"repo", repo}, {"version", version},
               {"variant", kVariant}, {"env", env}};
  for (const auto& [k, v] : extra.items()) request[k] = v;
  send(request);
  return id;
}

proto::ReceivedFrame WireClient::fetch(const std::string& repo, int version, const json& env,
                                       const json& extra) {
  send_fetch(repo, version, env, extra);
  for (;;) {
    auto frame = read(std::chrono::seconds(60));
    if (!frame) throw std::runtime_error("daemon closed the connection during fetch");
    const auto type = frame->message.value("type", "");
    if (type == "progress") continue;
    return std::move(*frame);
  }
}

bool wait_for_upstream_get(const FixtureHub& hub, const std::string& part) {
  return hub.wait_for("GET", part, 1, std::chrono::seconds(10));
}

json WireClient::status() {
  const auto id = next_id_++;
  send({{"type", "status"}, {"id", id}});
  auto frame = read();
  if (!frame) throw std::runtime_error("daemon closed the connection on status");
  return frame->message;
}

pid_t daemon_pid(const fs::path& socket) {
  WireClient client(socket);
  client.hello();
  return client.status().at("pid").get<pid_t>();
}

std::vector<std::string> check_handout(const proto::ReceivedFrame& fetched,
                                       const std::map<std::string, std::string>& expected) {
  std::vector<std::string> problems;
  const auto& m = fetched.message;
  if (m.value("type", "") != "fetched") return {"not a fetched frame: " + m.dump()};
  std::set<std::string> seen;
  for (const auto& f : m.at("files")) {
    const auto path = f.at("path").get<std::string>();
    seen.insert(path);
    const auto index = f.at("fd").get<std::size_t>();
    if (index >= fetched.fds.size()) {
      problems.push_back(path + ": fd index out of range");
      continue;
    }
    const int fd = fetched.fds[index].get();
    if ((::fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY)
      problems.push_back(path + ": fd is not read-only");
    trust::Sha256 h;
    char buf[1 << 16];
    off_t off = 0;
    for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, off)) > 0; off += n)
      h.update(buf, static_cast<std::size_t>(n));
    const auto digest = h.final_hex();
    if (static_cast<std::uint64_t>(off) != f.at("size").get<std::uint64_t>())
      problems.push_back(path + ": size");
    if (digest != f.at("sha256").get<std::string>())
      problems.push_back(path + ": fd bytes do not match the manifest");
    if (auto it = expected.find(path); it != expected.end() && it->second != digest) {
      problems.push_back(path + ": differs from the reference fetch");
    }
  }
  for (const auto& [path, sha] : expected) {
    if (!seen.count(path)) problems.push_back(path + ": missing from the hand-out");
  }
  return problems;
}

std::vector<std::string> check_cache(const fs::path& cache_root, const std::string& repo_folder,
                                     const std::map<std::string, std::string>& expected) {
  std::vector<std::string> problems;
  const auto repo = cache_root / repo_folder;
  if (!fs::exists(repo)) return problems;  // nothing published is consistent
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(repo, ec)) {
    const auto name = entry.path().filename().string();
    if (name.ends_with(".incomplete") || name.ends_with(".tmp")) {
      problems.push_back("leftover temp " + fs::relative(entry.path(), cache_root).string());
    }
  }
  if (fs::exists(repo / "blobs")) {
    for (const auto& blob : fs::directory_iterator(repo / "blobs")) {
      const auto name = blob.path().filename().string();
      if (name.ends_with(".incomplete")) continue;  // reported above
      const bool sha1 = trust::is_lower_hex(name, 40);
      if (!sha1 && !trust::is_lower_hex(name, 64)) {
        problems.push_back("unexpected entry in blobs/: " + name);
        continue;
      }
      if (hash_file(blob.path(), sha1) != name)
        problems.push_back("blob " + name + " does not hash to its name");
    }
  }
  if (fs::exists(repo / "snapshots")) {
    for (const auto& entry : fs::recursive_directory_iterator(repo / "snapshots")) {
      if (entry.is_symlink() && !fs::exists(entry.path())) {
        problems.push_back("snapshot link to a missing blob: " +
                           fs::relative(entry.path(), cache_root).string());
      }
    }
  }
  if (fs::exists(repo / "refs")) {
    for (const auto& ref : fs::directory_iterator(repo / "refs")) {
      if (ref.path().filename().string().ends_with(".tmp")) continue;
      std::ifstream in(ref.path());
      std::string commit;
      in >> commit;
      const auto snapshot = repo / "snapshots" / commit;
      for (const auto& [path, sha] : expected) {
        const auto file = snapshot / path;
        if (!fs::exists(file)) {
          problems.push_back("ref " + ref.path().filename().string() + " -> snapshot without " +
                             path);
        } else if (hash_file(file, false) != sha) {
          problems.push_back("ref " + ref.path().filename().string() + " -> wrong bytes for " +
                             path);
        }
      }
    }
  }
  return problems;
}

std::size_t fd_count(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e :
       fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
    ++n;
  return n;
}

std::size_t rss_kb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

void set_hub_faults(const FixtureHub& hub, const json& plan) {
  const auto& endpoint = hub.endpoint();
  const int port = std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
  httplib::Client client("127.0.0.1", port);
  const auto response = client.Post("/_kernelhub/faults", plan.dump(), "application/json");
  if (!response || response->status != 200) throw std::runtime_error("cannot set hub faults");
}

}  // namespace kernelhub::testing
