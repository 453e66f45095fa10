// Bundle imports into kernelhubd under pressure: a bundle of 1,500 blobs imports into a
// daemon held to 256 descriptors (each streamed blob waits closed), and an import whose
// publish fails half-way (EIO injected by strace into its second snapshot link) leaves
// nothing of itself in the shared cache while the daemon goes on serving.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "daemon_integration/strace_tools.hpp"
#include "daemon_integration/workspace.hpp"
#include "support/bundle_builder.hpp"

using namespace kernelhub::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const kernelhub::trust::RepoId kMany{"kernels-community", "many"};
const std::string kManyFolder = "kernels--kernels-community--many";
const std::string kCommit = "89abcdef0123456789abcdef0123456789abcdef";

#if defined(__x86_64__)
const std::string kSymlinkCall = "symlink";
#else
const std::string kSymlinkCall = "symlinkat";
#endif

CommandResult import_through(const Workspace& ws, const fs::path& bundle) {
  return run_command({kKernelhub, "bundle", "import", bundle.string(), "--json"},
                     {{"KERNELHUB_SOCKET", ws.socket.string()},
                      {"KERNELHUB_REQUIRE_DAEMON", "1"},
                      {"DIFFUSERS_TRUST_REMOTE_KERNELS", ""},
                      {"HF_HUB_OFFLINE", ""}});
}

// The soft RLIMIT_NOFILE of a running process, from /proc/PID/limits.
std::string open_files_limit(pid_t pid) {
  std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
  for (std::string line; std::getline(limits, line);) {
    if (line.starts_with("Max open files")) {
      std::istringstream fields(line.substr(std::string_view("Max open files").size()));
      std::string soft;
      fields >> soft;
      return soft;
    }
  }
  return "";
}

}  // namespace

TEST_CASE("kernelhubd imports a bundle of 1,500 blobs held to 256 descriptors",
          "[daemon][bundle][fds]") {
  REQUIRE(::geteuid() == 0);  // mounts a tmpfs for the daemon's cache; CI runs as root
  Workspace ws;
  const fs::path bundle = ws.dir.path() / "many.tar.zst";
  write_repo_bundle(bundle, kMany, kCommit, {"v1"}, {kVariant}, numbered_files(kVariant, 1500));
  fs::create_directories(ws.cache);
  DaemonConfig config = ws.config();
  // The daemon's cache on a tmpfs of its own mount namespace (1,500 fsyncs cost nothing
  // there), and at most 256 open files.
  const std::string script =
      "mount -t tmpfs -o size=64m,mode=0755 tmpfs \"$0\" && "
      "exec /usr/bin/prlimit --nofile=256 \"$@\"";
  config.wrapper = {"/usr/bin/unshare", "--mount", "--propagation", "private",
                    "/bin/sh",          "-c",      script,          ws.cache.string()};
  DaemonProcess daemon(config);
  const pid_t pid = daemon_pid(ws.socket);
  REQUIRE(open_files_limit(pid) == "256");  // the limit is real

  const auto imported = import_through(ws, bundle);
  INFO(imported.err << daemon.log());
  REQUIRE(imported.exit_code == 0);
  CHECK(json::parse(imported.out)[0]["files"] == 1500);
  // The daemon's cache, as its own mount namespace sees it.
  const fs::path seen = fs::path("/proc") / std::to_string(pid) / "root" /
                        ws.cache.relative_path() / kManyFolder / "snapshots" / kCommit / "build" /
                        kVariant;
  CHECK(slurp(seen / "m1499.py") == "x = 1499\n");
  CHECK(fd_count(pid) < 64);
  WireClient client(ws.socket);
  client.hello();
  CHECK(client.status().value("type", "") == "status");
}

TEST_CASE("an import failing half-way through its publish leaves nothing, and the daemon serves on",
          "[daemon][bundle][inject][strace]") {
  REQUIRE(run_command({"/bin/sh", "-c", "command -v strace"}).exit_code == 0);  // fail, not skip
  Workspace ws;
  const fs::path bundle = ws.dir.path() / "three.tar.zst";
  write_repo_bundle(bundle, kMany, kCommit, {"v1"}, {kVariant}, numbered_files(kVariant, 3));
  DaemonProcess daemon(ws.config());
  const fs::path prefix = ws.dir.path() / "calls";
  {
    // The second link of the snapshot fails: its blobs and first link are in place by then.
    StraceAttach strace(daemon.child().pid(),
                        {"-f", "-ff", "-y", "-o", prefix.string(), "-e", "trace=" + kSymlinkCall,
                         "-e", "inject=" + kSymlinkCall + ":error=EIO:when=2"},
                        ws.dir.path() / "strace.log");
    const auto failed = import_through(ws, bundle);
    INFO(failed.err);
    CHECK(failed.exit_code != 0);
    CHECK_THAT(failed.err,
               Catch::Contains("kernelhub: io: ") && Catch::Contains("Input/output error"));
    strace.detach();
  }
  std::vector<std::string> injected;
  std::size_t links = 0;
  for (const auto& call : read_traces(prefix)) {
    if (call.line.find(ws.cache.string()) != std::string::npos) ++links;
    if (call.injected) injected.push_back(call.line);
  }
  INFO(Catch::Detail::stringify(injected));
  REQUIRE(injected.size() == 1);
  CHECK(links == 2);  // the first link was made, the second failed: the fault came mid-publish
  CHECK(injected.front().find(ws.cache.string()) != std::string::npos);
  // Nothing of it: no blob, no snapshot, no ref (not even the repo folder the import made).
  CHECK_FALSE(fs::exists(ws.cache / kManyFolder));

  // Untraced, the same daemon imports it, and serves status.
  const auto imported = import_through(ws, bundle);
  INFO(imported.err << daemon.log());
  CHECK(imported.exit_code == 0);
  CHECK(slurp(ws.cache / kManyFolder / "refs" / "v1") == kCommit);
  WireClient client(ws.socket);
  client.hello();
  CHECK(client.status().value("type", "") == "status");
}
