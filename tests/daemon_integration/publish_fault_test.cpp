// I/O errors in the middle of a publish, injected by strace into the running kernelhubd
// (EIO, ENOSPC, EXDEV on write, fsync, rename, symlink, mkdir). For each: the call occurs in
// a cold fetch (counted first), strace reports the injection, the client gets a typed error
// (io, or disk_full for ENOSPC), no temp is left, nothing half-published is visible, and once
// strace lets go the same daemon answers status and another client's fetch with the
// reference bytes.
#include <catch2/catch.hpp>
#include <fstream>

#include "daemon_integration/strace_tools.hpp"
#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
namespace fs = std::filesystem;

namespace {

bool have_strace() { return run_command({"/bin/sh", "-c", "command -v strace"}).exit_code == 0; }

// x86_64 names; see crash_test.cpp for the measured counts and the other architectures.
#if defined(__x86_64__)
const std::string kRenameCall = "rename";
const std::string kSymlinkCall = "symlink";
const std::string kMkdirCall = "mkdir";
#elif defined(__aarch64__)
const std::string kRenameCall = "renameat";
const std::string kSymlinkCall = "symlinkat";
const std::string kMkdirCall = "mkdirat";
#else
const std::string kRenameCall = "renameat2";
const std::string kSymlinkCall = "symlinkat";
const std::string kMkdirCall = "mkdirat";
#endif

// Where in a cache the files of kRelu v1 live: the commit and a blob come from the
// reference fetch's own cache.
struct Layout {
  std::string commit;
  std::string so_etag;  // the .so's blob

  explicit Layout(const Workspace& ws) {
    const auto repo = ws.dir.path() / "reference-cache" / kRepoFolder;
    std::ifstream(repo / "refs" / "v1") >> commit;
    for (const auto& e : fs::directory_iterator(variant(repo))) {
      if (e.path().extension() == ".so") so_etag = fs::read_symlink(e.path()).filename().string();
    }
  }
  fs::path snapshot(const fs::path& repo) const { return repo / "snapshots" / commit; }
  fs::path variant(const fs::path& repo) const {
    return snapshot(repo) / "build" / std::string(kVariant);
  }
  // The variant folder as a traced line names it, in whichever cache.
  std::string variant_part() const { return "/snapshots/" + commit + "/build/" + kVariant; }
};

// One injected fault: `syscall` fails with `error` at its `when`-th call, counted among the
// calls naming `path` (-P) when one is given, else among all calls of the publishing thread.
struct Fault {
  std::string syscall;
  std::string error;  // EIO, ENOSPC, EXDEV
  std::size_t when = 1;
  fs::path path;
};

std::string expected_code(const Fault& f) { return f.error == "ENOSPC" ? "disk_full" : "io"; }

void check_fault(const Workspace& ws, const std::map<std::string, std::string>& reference,
                 const Fault& fault) {
  INFO("inject " << fault.syscall << ":error=" << fault.error << ":when=" << fault.when
                 << (fault.path.empty() ? "" : " -P " + fault.path.string()));
  fs::remove_all(ws.cache);
  auto config = ws.config();
  config.log = ws.dir.path() / "fault-daemon.log";
  DaemonProcess daemon(config);
  const fs::path prefix = ws.dir.path() / "fault-calls";
  for (const auto& e : fs::directory_iterator(ws.dir.path())) {
    if (e.path().filename().string().starts_with("fault-calls.")) fs::remove(e.path());
  }
  std::vector<std::string> options{
      "-f", "-ff", "-y", "-o", prefix.string(), "-e", "trace=" + fault.syscall};
  if (!fault.path.empty()) options.insert(options.end(), {"-P", fault.path.string()});
  options.insert(options.end(), {"-e", "inject=" + fault.syscall + ":error=" + fault.error +
                                           ":when=" + std::to_string(fault.when)});
  {
    StraceAttach strace(daemon.child().pid(), options, ws.dir.path() / "fault-strace.log");
    WireClient client(ws.socket);
    client.hello();
    const auto reply = client.fetch(kRelu, 1);
    INFO(reply.message.dump());
    CHECK(reply.message.value("type", "") == "error");
    CHECK(reply.message.value("code", "") == expected_code(fault));
    CHECK(!reply.message.value("message", "").empty());
    strace.detach();
  }
  // The fault happened, in the call meant. `when` counts per thread, so the connection
  // thread's first write, its log line about the failed fetch, fails too: not a cache call.
  std::vector<std::string> injected;
  for (const auto& c : read_traces(prefix)) {
    if (c.injected && c.line.find(config.log.string()) == std::string::npos)
      injected.push_back(c.line);
  }
  INFO(Catch::Detail::stringify(injected));
  REQUIRE(injected.size() == 1);
  CHECK(injected.front().find(ws.cache.string()) != std::string::npos);
  CHECK(injected.front().find(fault.error) != std::string::npos);

  // Nothing partial, no temps: every blob hashes to its name, every link has its blob, no
  // ref (refs come last; a failed fsync of refs/ itself leaves a complete one), no temp.
  const auto problems = check_cache(ws.cache, kRepoFolder, reference);
  INFO(Catch::Detail::stringify(problems));
  CHECK(problems.empty());
  if (fault.path.filename() != "refs") CHECK(!fs::exists(ws.cache / kRepoFolder / "refs" / "v1"));

  // The same daemon, untraced now, serves status and another client's fetch.
  WireClient other(ws.socket);
  other.hello();
  CHECK(other.status().value("type", "") == "status");
  const auto fetched = other.fetch(kRelu, 1);
  INFO(fetched.message.dump());
  REQUIRE(fetched.message.value("type", "") == "fetched");
  const auto handout = check_handout(fetched, reference);
  INFO(Catch::Detail::stringify(handout));
  CHECK(handout.empty());
  CHECK(check_cache(ws.cache, kRepoFolder, reference).empty());
}

// A count run with `syscall` traced; REQUIREs that the publishing thread made at least one
// call naming `part` of the cache (no vacuous injections).
FetchTrace counted(const Workspace& ws, const std::string& syscall,
                   const std::vector<std::string>& parts) {
  REQUIRE(have_strace());  // cannot run without it: fail, never skip
  auto trace = trace_cold_fetch(ws, {syscall});
  for (const auto& part : parts) {
    const auto calls = trace.publisher_calls(syscall, part);
    INFO(syscall << " calls naming '" << part << "' in a cold fetch: " << calls.size());
    REQUIRE(!calls.empty());
  }
  return trace;
}

}  // namespace

TEST_CASE("EIO and ENOSPC on the writes of a publish", "[daemon][inject][strace]") {
  Workspace ws;
  const auto reference = ws.reference();
  const auto trace = counted(ws, "write", {".incomplete", "CACHEDIR.TAG"});
  // The first write of a fresh cache is CACHEDIR.TAG's (an atomic small-file write, as refs
  // are); blobs follow.
  const auto tag = trace.points(trace.publisher_calls("write", "CACHEDIR.TAG"), 1);
  const auto blob = trace.publisher_calls("write", ".incomplete");
  const auto middle = trace.points({blob[blob.size() / 2]}, 1);
  REQUIRE(tag.size() == 1);
  REQUIRE(middle.size() == 1);
  check_fault(ws, reference, {"write", "ENOSPC", tag.front(), {}});
  check_fault(ws, reference, {"write", "EIO", middle.front(), {}});
  check_fault(ws, reference, {"write", "ENOSPC", middle.front(), {}});
}

TEST_CASE("EIO on the fsyncs of a publish", "[daemon][inject][strace]") {
  Workspace ws;
  const auto reference = ws.reference();
  const Layout layout(ws);
  const fs::path repo = ws.cache / kRepoFolder;
  const auto trace = counted(ws, "fsync", {".incomplete", "/blobs>", "/refs>"});
  // A blob's own fsync (by count), then folders by path: blobs/, the variant folder the links
  // are renamed into, refs/.
  const auto blob = trace.points(trace.publisher_calls("fsync", ".incomplete"), 1);
  REQUIRE(blob.size() == 1);
  const auto variant = trace.publisher_calls("fsync", layout.variant_part() + ">");
  INFO("fsyncs of the variant folder the links are renamed into: " << variant.size());
  REQUIRE(variant.size() == 1);
  check_fault(ws, reference, {"fsync", "EIO", blob.front(), {}});
  check_fault(ws, reference, {"fsync", "EIO", 1, repo / "blobs"});
  check_fault(ws, reference, {"fsync", "EIO", 1, layout.variant(repo)});
  check_fault(ws, reference, {"fsync", "EIO", 1, repo / "refs"});
}

TEST_CASE("EIO and EXDEV on the renames of a publish", "[daemon][inject][strace]") {
  Workspace ws;
  const auto reference = ws.reference();
  const Layout layout(ws);
  // strace's -P matches a rename by its old name only, and temps have random names: the
  // renames are picked by their place in the publishing thread (the order is fixed: tag,
  // blobs, links, ref).
  const std::vector<std::string> targets{"/blobs/" + layout.so_etag + "\"",
                                         layout.variant_part() + "/metadata.json\"", "/refs/v1\""};
  const auto trace = counted(ws, kRenameCall, targets);
  std::vector<std::size_t> at;
  for (const auto& target : targets) {
    const auto point = trace.points(trace.publisher_calls(kRenameCall, target), 1);
    REQUIRE(point.size() == 1);
    at.push_back(point.front());
  }
  check_fault(ws, reference, {kRenameCall, "EIO", at[0], {}});
  check_fault(ws, reference, {kRenameCall, "EXDEV", at[1], {}});
  check_fault(ws, reference, {kRenameCall, "EIO", at[2], {}});
}

TEST_CASE("ENOSPC on the symlinks and folders of a publish", "[daemon][inject][strace]") {
  Workspace ws;
  const auto reference = ws.reference();
  const Layout layout(ws);
  const auto links = counted(ws, kSymlinkCall, {"/snapshots/"});
  const auto first = links.points(links.publisher_calls(kSymlinkCall, "/snapshots/"), 1);
  REQUIRE(first.size() == 1);
  check_fault(ws, reference, {kSymlinkCall, "ENOSPC", first.front(), {}});
  (void)counted(ws, kMkdirCall, {layout.variant_part() + "\""});
  check_fault(ws, reference, {kMkdirCall, "ENOSPC", 1, layout.variant(ws.cache / kRepoFolder)});
}
