// What the Hub lists of a repo: its refs and the entries of its tree. The client reads them
// (hub_api.hpp), and the Hub-API servers write them (hub/server/repository_source.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kernelhub::hub {

struct GitRef {
  std::string name;           // "v1", "main"
  std::string ref;            // "refs/heads/v1"
  std::string target_commit;  // 40 hex
};

struct RepoRefs {
  std::vector<GitRef> branches;
  std::vector<GitRef> tags;
};

struct TreeEntry {
  std::string path;  // validated by trust::validate_repo_path
  bool is_file = false;
  std::string oid;  // git blob sha1 (files) or tree sha1 (folders)
  std::uint64_t size = 0;
  std::optional<std::string> lfs_sha256;  // LFS files: sha256 of the content

  bool is_lfs() const { return lfs_sha256.has_value(); }
  // The cache key: sha256 for LFS files, git blob sha1 otherwise.
  const std::string& etag() const { return lfs_sha256 ? *lfs_sha256 : oid; }
};

}  // namespace kernelhub::hub
