// While one lives, this process cannot open another file: RLIMIT_NOFILE's soft limit is
// lowered to just above the highest open descriptor and every free one below it is taken,
// so the next open(), socket() or SCM_RIGHTS delivery fails with EMFILE for real.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

namespace kernelhub::testing {

class OpenFileLimit {
 public:
  OpenFileLimit() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    int highest = 2;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
      highest = std::max(highest, std::stoi(entry.path().filename().string()));
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(highest) + 1;
    if (::setrlimit(RLIMIT_NOFILE, &lowered) != 0) return;
    for (;;) {
      const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        reached_ = errno == EMFILE;
        break;
      }
      fillers_.push_back(fd);
    }
  }
  OpenFileLimit(const OpenFileLimit&) = delete;
  OpenFileLimit& operator=(const OpenFileLimit&) = delete;
  ~OpenFileLimit() {
    for (const int fd : fillers_) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  // The last open failed with EMFILE: the limit is really reached.
  bool reached() const { return reached_; }

 private:
  rlimit saved_{};
  std::vector<int> fillers_;
  bool reached_ = false;
};

}  // namespace kernelhub::testing
