// The Hub's REST API for kernel repos: refs, revision -> commit, tree listings, file
// metadata. Kernel repo-type paths are tried first; a RepoNotFound there falls back to the
// model-type paths (legacy kernel repos), and the type that worked is remembered per repo.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hub/http.hpp"
#include "hub/hub_config.hpp"
#include "trust/repo_id.hpp"
#include "trust/result.hpp"

namespace kernelhub::hub {

enum class RepoKind { kernel, model };

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

struct FileMetadata {
  std::string commit;  // X-Repo-Commit
  std::string etag;    // X-Linked-Etag, else ETag; normalized
  std::uint64_t size = 0;
  std::string location;  // where the bytes are (an absolute redirect target, or the URL)
  bool is_lfs = false;
};

class HubApi {
 public:
  HubApi(HubConfig config, HttpClient& http) : config_(std::move(config)), http_(http) {}

  Result<RepoRefs> list_refs(const trust::RepoId& repo);
  // A 40-hex revision is returned as is, without a request.
  Result<std::string> resolve_revision(const trust::RepoId& repo, std::string_view revision);
  // Entries under `path_in_repo` ("" for the root), following Link rel="next" pages. Any
  // hostile or malformed entry fails the whole listing (unsafe_path / malformed_response).
  Result<std::vector<TreeEntry>> list_tree(const trust::RepoId& repo, std::string_view commit,
                                           std::string_view path_in_repo, bool recursive);
  Result<FileMetadata> head_file(const trust::RepoId& repo, std::string_view commit,
                                 std::string_view path);
  // The bytes of a small file at a commit (at most `cap`); nullopt when the Hub answers
  // EntryNotFound (the normal case for optional files such as kernel-status.toml).
  Result<std::optional<std::string>> read_optional_file(const trust::RepoId& repo,
                                                        std::string_view commit,
                                                        std::string_view path, std::size_t cap);

  // {endpoint}/kernels/{repo}/resolve/{commit}/{path} (or the model form for legacy repos).
  std::string resolve_url(const trust::RepoId& repo, std::string_view commit,
                          std::string_view path) const;
  RepoKind kind(const trust::RepoId& repo) const;
  const HubConfig& config() const { return config_; }

 private:
  std::string api_base(const trust::RepoId& repo, RepoKind kind) const;
  // Sends the request built for each kind in turn (kernel first unless the repo is known
  // to be a model), falling back on repo_not_found.
  template <class Build>
  Result<HttpResponse> send_with_fallback(const trust::RepoId& repo, Build build);
  void remember(const trust::RepoId& repo, RepoKind kind);

  HubConfig config_;
  HttpClient& http_;
  mutable std::mutex mutex_;
  std::map<std::string, RepoKind> kinds_;
};

bool is_commit_sha(std::string_view text) noexcept;

// Parsers for the JSON bodies (unit-tested without a server).
Result<RepoRefs> parse_refs_json(std::string_view body);
Result<std::string> parse_revision_json(std::string_view body);
// Validates every entry; `under` is the requested folder ("" = root).
Result<std::vector<TreeEntry>> parse_tree_json(std::string_view body, std::string_view under);

}  // namespace kernelhub::hub
