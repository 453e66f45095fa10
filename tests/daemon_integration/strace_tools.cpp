#include "daemon_integration/strace_tools.hpp"

#include <algorithm>
#include <csignal>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kernelhub::testing {
namespace fs = std::filesystem;

StraceAttach::StraceAttach(pid_t pid, const std::vector<std::string>& options,
                           const fs::path& log) {
  std::vector<std::string> argv{"strace", "-p", std::to_string(pid)};
  argv.insert(argv.end(), options.begin(), options.end());
  // The log is appended to: an earlier strace's "attached" must not count for this one.
  std::error_code ec;
  fs::remove(log, ec);
  child_ = std::make_unique<Child>(argv, EnvOverrides{}, log);
  // "strace: Process N attached [with M threads]": from then on every call is seen.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (slurp(log).find(" attached") == std::string::npos) {
    if (!child_->running() || std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("strace did not attach to " + std::to_string(pid) + ":\n" +
                               slurp(log));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

StraceAttach::~StraceAttach() { detach(); }

void StraceAttach::detach() {
  if (!child_->running()) return;
  child_->signal(SIGINT);  // strace detaches from every thread and exits
  (void)child_->wait(std::chrono::seconds(10));
}

std::vector<TracedCall> read_traces(const fs::path& prefix) {
  std::vector<TracedCall> calls;
  const std::string stem = prefix.filename().string() + ".";
  for (const auto& entry : fs::directory_iterator(prefix.parent_path())) {
    const auto name = entry.path().filename().string();
    if (!name.starts_with(stem)) continue;
    const auto tid = static_cast<pid_t>(std::stol(name.substr(stem.size())));
    std::map<std::string, std::size_t> seen;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      const auto paren = line.find('(');
      if (paren == std::string::npos || line.starts_with("+++") || line.starts_with("---"))
        continue;
      TracedCall call;
      call.tid = tid;
      call.syscall = line.substr(0, paren);
      if (call.syscall.find(' ') != std::string::npos) continue;
      call.index = ++seen[call.syscall];
      call.injected = line.find("(INJECTED)") != std::string::npos;
      call.line = std::move(line);
      calls.push_back(std::move(call));
    }
  }
  return calls;
}

std::vector<TracedCall> FetchTrace::publisher_calls(const std::string& syscall,
                                                    const std::string& part) const {
  const std::string needle = part.empty() ? cache.string() + "/" : part;
  std::vector<TracedCall> out;
  for (const auto& c : calls) {
    if (c.tid == publisher && c.syscall == syscall && c.line.find(needle) != std::string::npos)
      out.push_back(c);
  }
  return out;
}

std::vector<std::size_t> FetchTrace::points(const std::vector<TracedCall>& candidates,
                                            std::size_t max_points) const {
  std::vector<std::size_t> usable;
  for (const auto& c : candidates) {
    const auto it = others_max.find(c.syscall);
    if (c.index > (it == others_max.end() ? 0 : it->second)) usable.push_back(c.index);
  }
  if (usable.size() <= max_points || max_points < 2) {
    if (usable.size() > max_points) usable.resize(max_points);
    return usable;
  }
  std::vector<std::size_t> spread;
  for (std::size_t i = 0; i < max_points; ++i)
    spread.push_back(usable[i * (usable.size() - 1) / (max_points - 1)]);
  return spread;
}

FetchTrace trace_cold_fetch(const Workspace& ws, const std::vector<std::string>& syscalls) {
  static int run = 0;
  const std::string tag = "trace" + std::to_string(++run);
  FetchTrace trace;
  trace.cache = ws.dir.path() / (tag + "-cache");
  auto config = ws.config();
  config.cache = trace.cache;
  config.socket = ws.dir.path() / (tag + ".sock");
  config.log = ws.dir.path() / (tag + "-daemon.log");
  const fs::path prefix = ws.dir.path() / (tag + "-calls");
  std::string list;
  for (const auto& s : syscalls) list += (list.empty() ? "" : ",") + s;
  {
    DaemonProcess daemon(config);
    StraceAttach strace(daemon.child().pid(),
                        {"-f", "-ff", "-y", "-o", prefix.string(), "-e", "trace=" + list},
                        ws.dir.path() / (tag + "-strace.log"));
    WireClient client(config.socket);
    client.hello();
    const auto fetched = client.fetch(kRelu, 1);
    if (fetched.message.value("type", "") != "fetched")
      throw std::runtime_error("traced fetch: " + fetched.message.dump());
    strace.detach();
  }
  trace.calls = read_traces(prefix);
  const std::string repo = (trace.cache / kRepoFolder).string();
  std::map<pid_t, std::size_t> naming_repo;
  for (const auto& c : trace.calls) {
    if (c.line.find(repo) != std::string::npos) ++naming_repo[c.tid];
  }
  const auto top =
      std::max_element(naming_repo.begin(), naming_repo.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  if (top == naming_repo.end()) throw std::runtime_error("no traced call named " + repo);
  trace.publisher = top->first;
  for (const auto& c : trace.calls) {
    if (c.tid != trace.publisher)
      trace.others_max[c.syscall] = std::max(trace.others_max[c.syscall], c.index);
  }
  return trace;
}

}  // namespace kernelhub::testing
