// `kernelhub publish`: snapshot a build directory into a local store as a new commit on a
// branch (created if missing), optionally tagged. The new commit's tree is exactly the
// source tree; its parent is the branch's previous head, which stays reachable by sha.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub::server {

struct PublishRequest {
  std::filesystem::path root;  // the store
  trust::RepoId repo;
  std::string branch = "main";
  std::optional<std::string> tag;  // refused if it already names a different commit
  std::string message;
  std::filesystem::path source;
  std::optional<std::int64_t> timestamp;  // seconds since the epoch; default now
};

struct PublishResult {
  std::string commit;
  std::optional<std::string> parent;
  std::size_t files = 0;
};

// Regular files under `source` as (repo path, filesystem path), sorted by repo path.
// Skips __pycache__/ and *.pyc; refuses symlinks, special files and hostile names
// (control characters, backslashes, ".", "..", ".git") with unsafe_path.
Result<std::vector<std::pair<std::string, std::filesystem::path>>> collect_source_files(
    const std::filesystem::path& source);

Result<PublishResult> publish_directory(const PublishRequest& request);

// Points `branch` (created if missing) at an existing commit of the repo, whatever its
// history: what a force-push does on the Hub (tests of rollback protection use it).
Result<void> point_branch(const std::filesystem::path& root, const trust::RepoId& repo,
                          const std::string& branch, const std::string& commit);

}  // namespace kernelhub::hub::server
