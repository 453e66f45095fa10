// Small POSIX helpers shared by the cache: random temp suffixes, fsync of a directory,
// and errno -> Result mapping.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "trust/result.hpp"

namespace kernelhub::cache {

// 8 lowercase hex chars from OpenSSL's CSPRNG: process-unique temp names.
std::string random_suffix();

// io error (disk_full for ENOSPC/EDQUOT) "<what> <path>: strerror(err)".
Unexpected errno_error(int err, std::string_view what, const std::filesystem::path& path);

// Makes a rename/creation in `dir` durable.
Result<void> fsync_dir(const std::filesystem::path& dir);

// Writes `content` to `path` atomically: temp in the same dir, fsync, rename.
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               unsigned mode = 0644);

}  // namespace kernelhub::cache
