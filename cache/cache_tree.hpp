// Internal to kh_cache: reading the cache tree, one way each. Symlinks are read, never
// followed.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "kernelhub/cache/usage.hpp"

namespace kernelhub::cache::tree {

// A name blobs/ may hold: 64 hex (sha256 of the content) or 40 hex (git blob sha1).
bool is_blob_name(std::string_view name);

// The modification time of `st`, or of `path` itself (lstat; epoch when it cannot be read).
WallClock::time_point mtime_of(const struct stat& st);
WallClock::time_point mtime_of(const std::filesystem::path& path);

// Blob names the symlinks under `dir` point at (…/blobs/<name>); folder links not descended.
std::set<std::string> linked_blobs(const std::filesystem::path& dir);

// The commit a ref file names (40 hex, trailing whitespace of other writers dropped); nullopt
// when it cannot be read or names none.
std::optional<std::string> read_ref_file(const std::filesystem::path& path);

}  // namespace kernelhub::cache::tree
