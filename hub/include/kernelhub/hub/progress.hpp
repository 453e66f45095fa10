// Progress of a fetch, reported by the fetch pipeline and rendered by the CLI (a bar on a
// TTY, nothing otherwise) or forwarded as events by the daemon.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace kernelhub::hub {

struct FetchProgress {
  std::string current_file;      // repo-relative path of the file that last made progress
  std::uint64_t bytes_done = 0;  // over all files of this fetch
  std::uint64_t bytes_total = 0;
  int files_done = 0;
  int files_total = 0;
};

using ProgressCallback = std::function<void(const FetchProgress&)>;

}  // namespace kernelhub::hub
