// The one way to open and read a file whose path comes from outside (a flag, a policy, a
// lockfile, the cache): as a regular file or not at all. A FIFO's open(2) would wait for a
// writer forever and /dev/zero never ends, so each open is O_NONBLOCK (the open cannot
// wait), O_NOCTTY and O_CLOEXEC, then fstat refuses anything but a regular file, naming the
// path and what it is; reads are bounded by the file's real size and a cap.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::util {

// "a FIFO", "a directory", "a character device", ... for an st_mode.
std::string_view file_type_name(mode_t mode);

// `fd` (opened by someone else: a client's bundle) is a regular file: its stat, or
// invalid_argument "<what> is a FIFO, not a regular file".
Result<struct stat> require_regular_fd(int fd, std::string_view what);

// `path` opened read-only as a regular file (O_NONBLOCK cleared once it is known to be
// one). io when it cannot be opened, invalid_argument when it is not a regular file.
Result<UniqueFd> open_regular_file(const std::filesystem::path& path);

// The whole of the regular file at `path`: too_large naming its size and `max_bytes` when
// it holds more (from fstat, or found while reading a file that grows); otherwise the
// errors of open_regular_file.
Result<std::string> read_small_file(const std::filesystem::path& path, std::size_t max_bytes);

}  // namespace kernelhub::util
