// Defect 7 of issue 21: any local user could forge kernelhubd's log records. Under systemd
// each line the daemon writes to stderr is a journal entry and a leading "<N>" sets its
// priority; a repo id or revision holding "\n<4>..." was logged as is, so one request made
// an extra warning-level entry of the client's choosing (and ESC bytes drove the terminal of
// whoever read the log). Here a real kernelhubd logs in its journal format (stderr is the
// file JOURNAL_STREAM names) and each hostile request must give exactly one record, with
// the forged text escaped.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemon_integration/workspace.hpp"

using namespace kernelhub::testing;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Waits until the log holds `count` lines containing `needle`, up to 10 s.
std::vector<std::string> records_with(const DaemonProcess& daemon, const std::string& needle,
                                      std::size_t count) {
  std::vector<std::string> found;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    found.clear();
    for (auto& line : lines_of(daemon.log())) {
      if (line.find(needle) != std::string::npos) found.push_back(line);
    }
    if (found.size() >= count) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  return found;
}

}  // namespace

TEST_CASE("a client cannot forge kernelhubd's journal records through a repo or revision",
          "[daemon][log]") {
  Workspace ws;
  DaemonConfig config = ws.config();
  config.log = ws.dir.path() / "journal.log";
  std::ofstream(config.log).flush();
  struct stat st {};
  REQUIRE(::stat(config.log.c_str(), &st) == 0);
  config.env["JOURNAL_STREAM"] = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  DaemonProcess daemon(config);

  WireClient client(ws.socket);
  client.hello();
  // A hostile repo id: refused as invalid, and logged once.
  const auto refused = client.fetch("kernels-community/relu\n<4>refused FORGED-REPO\x1b[2J", 1);
  CHECK(refused.message.value("type", "") == "error");
  // A hostile revision of a real repo: goes to the Hub, is not found, logged once.
  const auto missing = client.fetch(
      kRelu, 1, nlohmann::json::object(),
      {{"version", nullptr}, {"revision", "main\n<3>error: FORGED-REV\x1b]0;owned\x07"}});
  CHECK(missing.message.value("type", "") == "error");

  const auto repo_records = records_with(daemon, "FORGED-REPO", 1);
  const auto rev_records = records_with(daemon, "FORGED-REV", 1);
  const std::string log = daemon.log();
  INFO(log);
  // One record each, at the daemon's priority, with the forged line break visible as \x0a.
  REQUIRE(repo_records.size() == 1);
  CHECK(repo_records[0].rfind("<6>info: ", 0) == 0);
  CHECK_THAT(repo_records[0], Catch::Contains("relu\\x0a<4>refused FORGED-REPO\\x1b[2J"));
  REQUIRE(rev_records.size() == 1);
  CHECK(rev_records[0].rfind("<6>info: ", 0) == 0);
  CHECK_THAT(rev_records[0], Catch::Contains("main\\x0a<3>error: FORGED-REV\\x1b]0;owned\\x07"));
  // Every record is one of the daemon's own: none starts with the client's priority.
  for (const auto& line : lines_of(log)) {
    CHECK(line.size() > 3);
    CHECK(line[0] == '<');
    CHECK(line.rfind("<4>refused FORGED", 0) != 0);
    CHECK(line.rfind("<3>error: FORGED", 0) != 0);
  }
  CHECK(log.find('\x1b') == std::string::npos);
  CHECK(log.find('\x07') == std::string::npos);
}
