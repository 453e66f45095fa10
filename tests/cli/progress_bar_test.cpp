// The progress bar's line content, throttling, TTY gating and clean finish.
#include <fcntl.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <string>

#include "kernelhub/cli/progress_bar.hpp"

using kernelhub::cli::ProgressBar;
using kernelhub::hub::FetchProgress;

namespace {

// A non-blocking pipe standing in for stderr.
struct Pipe {
  int fds[2]{-1, -1};
  Pipe() { REQUIRE(::pipe2(fds, O_NONBLOCK) == 0); }
  ~Pipe() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  std::string drain() const {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
    return out;
  }
};

FetchProgress halfway() {
  FetchProgress p;
  p.current_file = "build/torch215-cxx11-cpu-x86_64-linux/_relu_cpu_abc.abi3.so";
  p.bytes_done = 50ull * 1024 * 1024;
  p.bytes_total = 100ull * 1024 * 1024;
  p.files_done = 3;
  p.files_total = 7;
  return p;
}

}  // namespace

TEST_CASE("bar line shows percent, MiB done/total, rate, files and current file", "[progress]") {
  const auto line = ProgressBar::render(halfway(), 12.5 * 1024 * 1024, 200);
  CHECK_THAT(line, Catch::StartsWith("[############............]  50%"));
  CHECK_THAT(line, Catch::Contains("50.0/100.0 MiB"));
  CHECK_THAT(line, Catch::Contains("12.5 MiB/s"));
  CHECK_THAT(line, Catch::Contains("3/7 files"));
  CHECK_THAT(line, Catch::EndsWith("_relu_cpu_abc.abi3.so"));
}

TEST_CASE("bar line fits the terminal width, keeping the file name's tail", "[progress]") {
  const auto line = ProgressBar::render(halfway(), 0, 90);
  CHECK(line.size() <= 89);
  CHECK_THAT(line, Catch::Contains("..."));
  CHECK_THAT(line, Catch::EndsWith(".abi3.so"));
  CHECK(ProgressBar::render(halfway(), 0, 20).size() <= 19);
}

TEST_CASE("unknown total renders 0% instead of dividing by zero", "[progress]") {
  FetchProgress p;
  p.bytes_done = 10;
  CHECK_THAT(ProgressBar::render(p, 0, 120), Catch::Contains("  0%"));
}

TEST_CASE("disabled bar (not a TTY) writes nothing", "[progress]") {
  Pipe pipe;
  {
    ProgressBar bar(pipe.fds[1], false);
    bar.update(halfway());
    bar.finish();
  }
  CHECK(pipe.drain().empty());
}

TEST_CASE("updates are throttled but completion always draws, and finish clears the line",
          "[progress]") {
  Pipe pipe;
  ProgressBar bar(pipe.fds[1], true, std::chrono::hours(1));
  bar.update(halfway());
  auto later = halfway();
  later.bytes_done += 1024 * 1024;
  bar.update(later);  // inside the interval: dropped
  const auto first = pipe.drain();
  CHECK_THAT(first, Catch::Contains("50.0/100.0 MiB"));
  CHECK_THAT(first, !Catch::Contains("51.0/100.0 MiB"));

  auto done = halfway();
  done.bytes_done = done.bytes_total;
  done.files_done = done.files_total;
  bar.update(done);  // completion: drawn despite the interval
  CHECK_THAT(pipe.drain(), Catch::Contains("100%"));

  bar.finish();
  CHECK(pipe.drain() == "\r\033[K");
  bar.finish();  // nothing drawn since: nothing to clear
  CHECK(pipe.drain().empty());
}
