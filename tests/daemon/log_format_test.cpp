// kernelhubd's log lines: under journald each line carries its syslog priority, so
// `journalctl -p warning` filters refusals and upstream errors (docs/operations.md, "Metrics and
// logs").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "kernelhub/daemon/log_format.hpp"
#include "kernelhub/util/unique_fd.hpp"

using namespace kernelhub::daemon;

namespace {

std::string format_line(LogTarget target, spdlog::level::level_enum level, const char* text) {
  const spdlog::details::log_msg msg("kernelhubd", level, text);
  spdlog::memory_buf_t out;
  make_log_formatter(target)->format(msg, out);
  return {out.data(), out.size()};
}

}  // namespace

TEST_CASE("journal lines start with the syslog priority", "[daemon][log]") {
  CHECK(format_line(LogTarget::journal, spdlog::level::warn, "refused x") ==
        "<4>warning: refused x\n");
  CHECK(format_line(LogTarget::journal, spdlog::level::info, "published") ==
        "<6>info: published\n");
  CHECK(format_line(LogTarget::journal, spdlog::level::err, "e") == "<3>error: e\n");
  CHECK(format_line(LogTarget::journal, spdlog::level::debug, "d") == "<7>debug: d\n");
  CHECK(format_line(LogTarget::plain, spdlog::level::warn, "refused x") == "warning: refused x\n");
}

TEST_CASE("the journal is used only when stderr is the stream JOURNAL_STREAM names",
          "[daemon][log]") {
  std::string path = "/tmp/kh-log-XXXXXX";
  kernelhub::UniqueFd fd(::mkstemp(path.data()));
  REQUIRE(fd);
  ::unlink(path.c_str());
  struct stat st {};
  REQUIRE(::fstat(fd.get(), &st) == 0);
  const std::string same = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  const std::string other = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
  CHECK(log_target(fd.get(), same.c_str()) == LogTarget::journal);
  CHECK(log_target(fd.get(), other.c_str()) == LogTarget::plain);
  CHECK(log_target(fd.get(), nullptr) == LogTarget::plain);
  CHECK(log_target(fd.get(), "garbage") == LogTarget::plain);
}

// A client's repo id or revision reaches log lines: escaped by the formatter, it can neither
// start a journal entry of its own (at a priority of its choosing) nor drive a terminal.
TEST_CASE("log messages are escaped and cut in every target", "[daemon][log]") {
  const char* forged = "refused kernels-community/relu\n<4>refused FORGED\x1b[2J";
  const std::string escaped = "refused kernels-community/relu\\x0a<4>refused FORGED\\x1b[2J";
  CHECK(format_line(LogTarget::journal, spdlog::level::info, forged) ==
        "<6>info: " + escaped + "\n");
  CHECK(format_line(LogTarget::plain, spdlog::level::info, forged) == "info: " + escaped + "\n");
  const std::string terminal = format_line(LogTarget::terminal, spdlog::level::info, forged);
  CHECK(terminal.find(escaped + "\n") != std::string::npos);
  CHECK(terminal.find('\x1b') == std::string::npos);

  const std::string huge(100'000, 'x');
  const std::string line = format_line(LogTarget::journal, spdlog::level::warn, huge.c_str());
  CHECK(line == "<4>warning: " + std::string(kMaxLogPayload, 'x') + "...\n");
}
