// Opening a path beneath a directory fd without following any symlink: the embedded
// client's blob hand-out and the loader's local kernel builds both need it.
#pragma once

#include <fcntl.h>

#include <string_view>

#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub {

// Opens the relative '/'-separated `relpath` (checked with trust::validate_repo_path: no
// '..', no absolute path) beneath the directory `dir_fd`, with openat2 and
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_XDEV. Where openat2
// is unavailable, walks the components with openat(O_NOFOLLOW). `flags` are open(2) flags
// (O_RDONLY, O_DIRECTORY, O_PATH, ...); O_CLOEXEC and O_NOCTTY are always added.
// A symlink on the way is unsafe_path; other failures are io.
Result<UniqueFd> open_beneath(int dir_fd, std::string_view relpath, int flags = O_RDONLY);

}  // namespace kernelhub
