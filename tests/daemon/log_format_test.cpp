// kernelhubd's log lines: under journald each line carries its syslog priority, so
// `journalctl -p warning` filters refusals and upstream errors (README "Logs").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "daemon/log_format.hpp"
#include "trust/unique_fd.hpp"

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
