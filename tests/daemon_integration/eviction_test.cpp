// kernelhubd's bounded cache (issue 24): eviction by least recent use after a publish, with
// its numbers in status and /metrics and its reasons in the log; files handed out before an
// eviction still read (and stay mapped) after it, and the next fetch downloads again; pins
// and gc bounds under the import rule; uses recorded in batches, not per hand-out; SIGKILL in
// the middle of an eviction leaves a cache that `kernelhub verify` and `hf cache ls` accept.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "daemon_integration/strace_tools.hpp"
#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

#if defined(__x86_64__)
const std::string kRenameCall = "rename";
#elif defined(__aarch64__)
const std::string kRenameCall = "renameat";
#else
const std::string kRenameCall = "renameat2";
#endif

bool wait_until(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

fs::path repo_dir(const Workspace& ws) { return ws.cache / kRepoFolder; }

fs::path variant_dir(const Workspace& ws, const std::string& commit) {
  return repo_dir(ws) / "snapshots" / commit / "build" / kVariant;
}

std::string commit_of(const kernelhub::proto::ReceivedFrame& f) {
  return f.message.at("commit").get<std::string>();
}

std::uint64_t counter(const json& status, const char* name) {
  return status.at("counters").value(name, std::uint64_t{0});
}

// Rewrites the policy and waits until kernelhubd has read it again (SIGHUP is asynchronous).
void reload_policy(DaemonProcess& daemon, const fs::path& policy, const std::string& text) {
  const auto reloads = [&] {
    const std::string log = daemon.log();
    std::size_t n = 0;
    for (auto at = log.find("policy reloaded"); at != std::string::npos;
         at = log.find("policy reloaded", at + 1))
      ++n;
    return n;
  };
  const auto before = reloads();
  std::ofstream(policy) << text;
  daemon.child().signal(SIGHUP);
  REQUIRE(wait_until([&] { return reloads() > before; }));
}

// The repo's blob bytes as `kernelhub ls --json` reports them (the daemon's cache).
std::uint64_t repo_bytes(const Workspace& ws, const std::string& repo) {
  const auto listed = kernelhub_cli({"ls", "--json"}, ws);
  INFO(listed.out << listed.err);
  REQUIRE(listed.exit_code == 0);
  const json doc = json::parse(listed.out);  // kept: the loop reads into it
  for (const auto& r : doc.at("repos"))
    if (r.at("repo") == repo) return r.at("size_bytes").get<std::uint64_t>();
  return 0;
}

// `hf cache ls --show-warnings` of the venv's huggingface_hub: exit status and output.
CommandResult hf_cache_ls(const fs::path& cache) {
  return run_command({KH_HF_CLI, "cache", "ls", "--cache-dir", cache.string(), "--show-warnings",
                      "--format", "json"},
                     {{"NO_COLOR", "1"}});
}

// Every ref of the repo names a snapshot that exists.
std::vector<std::string> dangling_refs(const Workspace& ws) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& ref : fs::directory_iterator(repo_dir(ws) / "refs", ec)) {
    std::ifstream in(ref.path());
    std::string commit;
    in >> commit;
    if (!fs::is_directory(repo_dir(ws) / "snapshots" / commit))
      out.push_back(ref.path().filename().string() + " -> " + commit);
  }
  return out;
}

// A kernelhubd on the workspace with `policy_text` as its policy (rewritable: reload_policy),
// a connected client, and relu v1 fetched.
struct BoundedDaemon {
  fs::path policy;
  std::unique_ptr<DaemonProcess> daemon;
  std::unique_ptr<WireClient> client;
  kernelhub::proto::ReceivedFrame v1;
  BoundedDaemon(const Workspace& ws, const std::string& policy_text)
      : policy(ws.dir.path() / "policy.toml") {
    std::ofstream(policy) << policy_text;
    DaemonConfig config = ws.config();
    config.policy = policy;
    daemon = std::make_unique<DaemonProcess>(config);
    client = std::make_unique<WireClient>(ws.socket);
    client->hello();
    v1 = client->fetch(kRelu, 1);
    REQUIRE(v1.message.at("type") == "fetched");
  }
};

}  // namespace

TEST_CASE("kernelhubd evicts the least recently used variant after a publish, and reports it",
          "[daemon][eviction]") {
  Workspace ws;
  BoundedDaemon bounded(ws, "[cache]\nin_use_grace = 0\n");
  auto& daemon = *bounded.daemon;
  auto& client = *bounded.client;
  const auto& policy = bounded.policy;
  const auto& v1 = bounded.v1;
  const auto v2 = client.fetch(kRelu, 2);
  REQUIRE(v2.message.at("type") == "fetched");
  const std::string c1 = commit_of(v1), c2 = commit_of(v2);
  std::uint64_t v1_bytes = 0;
  for (const auto& f : v1.message.at("files")) v1_bytes += f.at("size").get<std::uint64_t>();

  // A file of v1 mapped, as a loaded library holds its file.
  REQUIRE(!v1.fds.empty());
  const auto first_size = v1.message.at("files")[0].at("size").get<std::size_t>();
  void* mapped = ::mmap(nullptr, first_size, PROT_READ, MAP_PRIVATE, v1.fds[0].get(), 0);
  REQUIRE(mapped != MAP_FAILED);
  const std::string before(static_cast<const char*>(mapped), first_size);

  // Room for relu as it is and one more variant of v1's size, less a byte: the SageAttention
  // copy's publish must evict exactly one variant, relu v1, the least recently used.
  const std::uint64_t max_size = repo_bytes(ws, kRelu) + v1_bytes - 1;
  reload_policy(daemon, policy,
                "[cache]\nin_use_grace = 0\nmax_size = " + std::to_string(max_size) + "\n");
  const auto sage = client.fetch(kSage, 1, {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}});
  INFO(sage.message.dump());
  REQUIRE(sage.message.at("type") == "fetched");
  REQUIRE(wait_until([&] { return !fs::exists(variant_dir(ws, c1)); }));
  REQUIRE(wait_until([&] { return counter(client.status(), "evictions") == 1; }));
  INFO(daemon.log());
  CHECK(fs::exists(variant_dir(ws, c2)));
  CHECK(check_handout(sage).empty());
  // v1's snapshot went with its ref; the rollback guard's state stayed.
  CHECK_FALSE(fs::exists(repo_dir(ws) / "refs" / "v1"));
  CHECK(fs::exists(repo_dir(ws) / ".kernelhub" / "v1.json"));
  CHECK(dangling_refs(ws).empty());
  CHECK(check_cache(ws.cache, kRepoFolder, {}).empty());

  const auto status = client.status();
  CHECK(counter(status, "evictions") == 1);
  CHECK(counter(status, "evicted_bytes") > 0);
  CHECK(counter(status, "cache_bytes") <= max_size);
  CHECK(counter(status, "cache_free_bytes") > 0);
  const std::string log = daemon.log();
  CHECK_THAT(log, Catch::Contains("evicted kernels-community/relu@" + c1.substr(0, 12)) &&
                      Catch::Contains("max_size"));
  const auto text = kernelhub_cli({"status"}, ws);
  CHECK_THAT(text.out, Catch::Contains(" pinned), ") && Catch::Contains("; 1 evicted ("));
  const auto metrics = kernelhub_cli({"status", "--prometheus"}, ws);
  CHECK_THAT(metrics.out, Catch::Contains("kernelhub_evictions_total 1") &&
                              Catch::Contains("kernelhub_cache_bytes ") &&
                              Catch::Contains("kernelhub_evicted_bytes_total "));

  // What was handed out before still reads right, through its fd and its mapping.
  CHECK(check_handout(v1).empty());
  CHECK(std::string(static_cast<const char*>(mapped), first_size) == before);
  ::munmap(mapped, first_size);

  // The next fetch of v1 downloads it again (and now v2 is the least recently used).
  const auto again = client.fetch(kRelu, 1);
  REQUIRE(again.message.at("type") == "fetched");
  CHECK(commit_of(again) == c1);
  CHECK(check_handout(again).empty());
  CHECK(fs::exists(variant_dir(ws, c1)));
  REQUIRE(wait_until([&] { return !fs::exists(variant_dir(ws, c2)); }));
  // Counted once the pass is over (the folder goes first).
  CHECK(wait_until([&] { return counter(client.status(), "evictions") == 2; }));
}

TEST_CASE("pins and gc bounds through kernelhubd follow the import rule, pins are kept",
          "[daemon][eviction][pins]") {
  REQUIRE(::geteuid() == 0);  // acts as another uid below; CI runs as root
  REQUIRE(fs::exists("/usr/bin/setpriv"));
  Workspace ws;
  BoundedDaemon bounded(ws, "[cache]\nin_use_grace = 0\n");
  auto& daemon = *bounded.daemon;
  auto& client = *bounded.client;
  const auto& policy = bounded.policy;
  const std::string c1 = commit_of(bounded.v1);
  const std::string c2 = commit_of(client.fetch(kRelu, 2));

  // Another uid: may look, may not change.
  const auto refused = kernelhub_cli({"pin", kRelu, "--version", "1"}, ws, kAsNobody);
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err, Catch::Contains("permission_denied") && Catch::Contains("import_users"));
  CHECK(kernelhub_cli({"pin", "--list", "--json"}, ws, kAsNobody).exit_code == 0);
  const auto evict_refused = kernelhub_cli({"gc", "--max-size", "1"}, ws, kAsNobody);
  CHECK(evict_refused.exit_code != 0);
  CHECK_THAT(evict_refused.err, Catch::Contains("permission_denied"));
  const auto dry = kernelhub_cli({"gc", "--max-size", "1", "--dry-run", "--json"}, ws, kAsNobody);
  INFO(dry.err);
  REQUIRE(dry.exit_code == 0);
  CHECK(json::parse(dry.out).at("evicted").size() == 2);
  CHECK(fs::exists(variant_dir(ws, c1)));
  CHECK(fs::exists(variant_dir(ws, c2)));

  // Root pins v1; a gc down to one byte then takes v2 only and says the bound is not met.
  const auto pinned = kernelhub_cli({"pin", kRelu, "--version", "1"}, ws);
  INFO(pinned.err);
  REQUIRE(pinned.exit_code == 0);
  const auto listed = json::parse(kernelhub_cli({"pin", "--list", "--json"}, ws).out);
  REQUIRE(listed.at("repos").size() == 1);
  const auto& pin = listed.at("repos")[0].at("pins")[0];
  CHECK(pin.at("commit") == c1);
  CHECK(pin.at("cached") == true);
  CHECK(pin.at("size_bytes").get<std::uint64_t>() > 0);
  CHECK(pin.at("pinned_by") == "uid 0");
  const auto gc = kernelhub_cli({"gc", "--max-size", "1", "--json"}, ws);
  INFO(gc.err);
  REQUIRE(gc.exit_code == 0);
  const auto report = json::parse(gc.out);
  REQUIRE(report.at("evicted").size() == 1);
  CHECK(report.at("evicted")[0].at("commit") == c2);
  CHECK(report.at("within_bounds") == false);
  CHECK(report.at("pinned_bytes").get<std::uint64_t>() > 0);
  CHECK(fs::exists(variant_dir(ws, c1)));
  CHECK_FALSE(fs::exists(variant_dir(ws, c2)));

  // A pin that alone would exceed max_size is refused when made, with the sizes.
  reload_policy(daemon, policy, "[cache]\nin_use_grace = 0\nmax_size = 1000\n");
  const auto too_big = kernelhub_cli({"pin", kRelu, "--revision", c1, "--variant", kVariant}, ws);
  CHECK(too_big.exit_code != 0);
  CHECK_THAT(too_big.err, Catch::Contains("max_size of 1000 bytes") && Catch::Contains("this pin"));

  // Unpinned, v1 goes too.
  const auto unpinned = kernelhub_cli({"unpin", kRelu, "--json"}, ws);
  REQUIRE(unpinned.exit_code == 0);
  CHECK(json::parse(unpinned.out).at("removed") == 1);
  REQUIRE(kernelhub_cli({"gc", "--max-size", "1"}, ws).exit_code == 0);
  CHECK_FALSE(fs::exists(variant_dir(ws, c1)));
}

TEST_CASE("kernelhubd records uses in batches, not per hand-out", "[daemon][eviction][strace]") {
  REQUIRE(run_command({"/bin/sh", "-c", "command -v strace"}).exit_code == 0);  // fail, not skip
  Workspace ws;
  DaemonProcess daemon(ws.config());
  WireClient client(ws.socket);
  client.hello();
  const std::string c1 = commit_of(client.fetch(kRelu, 1));
  REQUIRE(kernelhub_cli({"gc", "--dry-run"}, ws).exit_code == 0);  // a pass writes the batch
  const fs::path marker = repo_dir(ws) / ".kernelhub" / "used" / c1 / kVariant;
  REQUIRE(fs::exists(marker));
  const auto first = fs::last_write_time(marker);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));

  const fs::path trace = ws.dir.path() / "utimensat.trace";
  constexpr int kWarm = 100;
  {
    StraceAttach strace(daemon_pid(ws.socket),
                        {"-f", "-y", "-e", "trace=utimensat", "-o", trace.string()},
                        ws.dir.path() / "strace.log");
    for (int i = 0; i < kWarm; ++i) REQUIRE(client.fetch(kRelu, 1).message.at("type") == "fetched");
    CHECK(fs::last_write_time(marker) == first);  // nothing written yet
    // The next pass writes what the hand-outs recorded, once.
    REQUIRE(kernelhub_cli({"gc", "--dry-run"}, ws).exit_code == 0);
  }
  std::ifstream in(trace);
  std::size_t writes = 0;
  for (std::string line; std::getline(in, line);)
    if (line.find("utimensat(") != std::string::npos && line.find("/used/") != std::string::npos)
      ++writes;
  INFO("marker writes for " << kWarm << " warm hand-outs: " << writes);
  // The gc pass wrote it (the fault-free proof that the trace sees such writes); at most one
  // more from the 30 s timer if the hand-outs took that long.
  CHECK(writes >= 1);
  CHECK(writes <= 2);
  CHECK(fs::last_write_time(marker) > first);
}

TEST_CASE("SIGKILL in the middle of an eviction leaves a consistent cache",
          "[daemon][eviction][inject][strace]") {
  REQUIRE(run_command({"/bin/sh", "-c", "command -v strace"}).exit_code == 0);  // fail, not skip
  Workspace ws;
  const auto reference = ws.reference();
  std::string c1, c2;
  {
    DaemonProcess daemon(ws.config());
    WireClient client(ws.socket);
    client.hello();
    c1 = commit_of(client.fetch(kRelu, 1));
    c2 = commit_of(client.fetch(kRelu, 2));
    // Renames during a gc are the eviction's alone (each variant, then each bare snapshot,
    // into the trash): the second is v2's variant, after v1's went.
    StraceAttach strace(
        daemon_pid(ws.socket),
        {"-f", "-o", (ws.dir.path() / "strace.out").string(), "-e", "trace=" + kRenameCall, "-e",
         "inject=" + kRenameCall + ":signal=KILL:when=2"},
        ws.dir.path() / "strace.log");
    const auto gc = kernelhub_cli({"gc", "--max-size", "1"}, ws);
    CHECK(gc.exit_code != 0);  // the daemon died under it
    const auto status = daemon.child().wait(std::chrono::seconds(20));
    REQUIRE(status);
    INFO("wait status " << *status);
    CHECK(WIFSIGNALED(*status));
    CHECK(WTERMSIG(*status) == SIGKILL);
  }
  // Mid-eviction: v1's variant is in the trash, v2's is where it was.
  CHECK_FALSE(fs::is_empty(repo_dir(ws) / ".kernelhub" / "trash"));
  CHECK_FALSE(fs::exists(variant_dir(ws, c1)));
  CHECK(fs::exists(variant_dir(ws, c2)));

  CHECK(dangling_refs(ws).empty());
  CHECK(check_cache(ws.cache, kRepoFolder, {}).empty());
  const auto verify = run_command({kKernelhubCli, "verify", "--cache-dir", ws.cache.string()});
  INFO(verify.out << verify.err);
  CHECK(verify.exit_code == 0);
  const auto hf = hf_cache_ls(ws.cache);
  INFO(hf.out << hf.err);
  CHECK(hf.exit_code == 0);
  CHECK(hf.out.find("arning") == std::string::npos);
  CHECK(hf.err.find("arning") == std::string::npos);

  // A restarted daemon serves both versions (v1 downloaded again), and its next gc empties
  // the trash.
  DaemonProcess restarted(ws.config());
  WireClient client(ws.socket);
  client.hello();
  const auto v1 = client.fetch(kRelu, 1);
  REQUIRE(v1.message.at("type") == "fetched");
  CHECK(check_handout(v1, reference).empty());
  CHECK(client.fetch(kRelu, 2).message.at("type") == "fetched");
  REQUIRE(kernelhub_cli({"gc"}, ws).exit_code == 0);
  CHECK(fs::is_empty(repo_dir(ws) / ".kernelhub" / "trash"));
}

TEST_CASE("a download that hits ENOSPC evicts and is retried once",
          "[daemon][eviction][inject][strace]") {
  REQUIRE(run_command({"/bin/sh", "-c", "command -v strace"}).exit_code == 0);  // fail, not skip
  Workspace ws;
  // A bound the cache is well within: only the full disk makes the daemon evict.
  BoundedDaemon bounded(ws, "[cache]\nin_use_grace = 0\nmax_size = \"1TiB\"\n");
  auto& daemon = *bounded.daemon;
  auto& client = *bounded.client;
  const std::string c1 = commit_of(bounded.v1);
  const fs::path trace = ws.dir.path() / "enospc.trace";
  kernelhub::proto::ReceivedFrame v2;
  {
    // The first write of each thread fails with ENOSPC, once: for v2's flight (a new thread)
    // that is its first blob write (curl sends with sendto, logs come after).
    StraceAttach strace(daemon_pid(ws.socket),
                        {"-f", "-y", "-o", trace.string(), "-e", "trace=write", "-e",
                         "inject=write:error=ENOSPC:when=1"},
                        ws.dir.path() / "strace.log");
    v2 = client.fetch(kRelu, 2);
  }
  INFO(daemon.log());
  std::ifstream in(trace);
  const std::string traced((std::istreambuf_iterator<char>(in)), {});
  CHECK_THAT(traced, Catch::Contains(".incomplete>") &&
                         Catch::Contains("ENOSPC (No space left on device) (INJECTED)"));
  REQUIRE(v2.message.at("type") == "fetched");
  CHECK(check_handout(v2).empty());
  CHECK_THAT(daemon.log(),
             Catch::Contains("ran out of disk") &&
                 Catch::Contains("evicted kernels-community/relu@" + c1.substr(0, 12)));
  CHECK_FALSE(fs::exists(variant_dir(ws, c1)));
  CHECK(check_cache(ws.cache, kRepoFolder, {}).empty());
}

TEST_CASE("a download whose listed sizes do not fit evicts first (a small file system)",
          "[daemon][eviction]") {
  REQUIRE(::geteuid() == 0);  // a tmpfs in a mount namespace of its own; CI runs as root
  REQUIRE(fs::exists("/usr/bin/unshare"));
  Workspace ws;
  const fs::path policy = ws.dir.path() / "policy.toml";
  std::ofstream(policy) << "[cache]\nin_use_grace = 0\nmin_free = \"512KiB\"\n";
  fs::create_directories(ws.cache);  // the tmpfs goes over it (mode set by the mount)
  DaemonConfig config = ws.config();
  config.policy = policy;
  // A 7 MiB tmpfs over the cache, seen only by the daemon: two versions of relu fit, a third
  // kernel of the same size does not.
  config.wrapper = {
      "/usr/bin/unshare",
      "-m",
      "--propagation",
      "private",
      "/bin/sh",
      "-c",
      "mount -t tmpfs -o size=7m,mode=0755 tmpfs '" + ws.cache.string() + R"(' && exec "$0" "$@")"};
  DaemonProcess daemon(config);
  WireClient client(ws.socket);
  client.hello();
  const std::string c1 = commit_of(client.fetch(kRelu, 1));
  REQUIRE(client.fetch(kRelu, 2).message.at("type") == "fetched");
  const auto sage = client.fetch(kSage, 1, {{"DIFFUSERS_TRUST_REMOTE_KERNELS", "1"}});
  INFO(daemon.log());
  REQUIRE(sage.message.at("type") == "fetched");
  CHECK(check_handout(sage).empty());
  CHECK_THAT(daemon.log(),
             Catch::Contains("to make room for a download") &&
                 Catch::Contains("evicted kernels-community/relu@" + c1.substr(0, 12)));
  // The daemon's view (the tmpfs is not mounted out here): v1 is gone, v2 and sage stay.
  const auto listed = json::parse(kernelhub_cli({"ls", "--json"}, ws).out);
  std::set<std::string> revisions;  // repo@commit (the Sage copy has relu v1's commit)
  for (const auto& repo : listed.at("repos"))
    for (const auto& rev : repo.at("revisions"))
      revisions.insert(repo.at("repo").get<std::string>() + "@" +
                       rev.at("commit").get<std::string>());
  CHECK_FALSE(revisions.contains(kRelu + "@" + c1));
  CHECK(revisions.size() == 2);
  CHECK(counter(client.status(), "evictions") >= 1);
}

TEST_CASE("gc beside fetches in flight: every hand-out reads right", "[daemon][eviction]") {
  Workspace ws;
  const auto reference_v1 = ws.reference(kRelu, 1);
  DaemonProcess daemon(ws.config());
  std::atomic<bool> stop{false};
  std::atomic<int> served{0};
  std::mutex mutex;
  std::vector<std::string> problems;
  std::vector<std::thread> clients;
  clients.reserve(4);
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      WireClient client(ws.socket);
      client.hello();
      while (!stop.load()) {
        const auto fetched = client.fetch(kRelu, 1 + i % 2);
        auto found = fetched.message.value("type", "") == "fetched"
                         ? check_handout(fetched, i % 2 == 0 ? reference_v1
                                                             : std::map<std::string, std::string>{})
                         : std::vector<std::string>{fetched.message.dump()};
        const std::lock_guard lock(mutex);
        problems.insert(problems.end(), found.begin(), found.end());
        ++served;
      }
    });
  }
  // Root evicts everything, again and again, while the four clients fetch.
  for (int round = 0; round < 10; ++round) {
    const auto gc = kernelhub_cli({"gc", "--max-size", "1"}, ws);
    INFO(gc.err);
    CHECK(gc.exit_code == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop = true;
  for (auto& t : clients) t.join();
  INFO(Catch::Detail::stringify(problems) << daemon.log());
  CHECK(problems.empty());
  CHECK(served.load() > 10);
  WireClient client(ws.socket);
  client.hello();
  CHECK(counter(client.status(), "evictions") > 0);  // the gc runs did evict under the load
  CHECK(check_cache(ws.cache, kRepoFolder, {}).empty());
}
