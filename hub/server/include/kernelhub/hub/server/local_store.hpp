// The local store behind `kernelhub serve`: many Hub-style repos in one directory tree,
// with content-addressed objects, JSON commits and branch/tag refs (docs/local-store.md).
// Readers never see partial state: every write is temp file + rename, refs last.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/file_lock.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub::server {

inline constexpr std::uint64_t kLfsThreshold = std::uint64_t{1024} * 1024;

// The Hub stores binaries and big files in LFS: their oid/etag is the sha256.
bool is_lfs_file(std::string_view path, std::uint64_t size);

struct StoredFile {
  std::uint64_t size = 0;
  std::string sha256;   // 64 hex; names the object
  std::string git_oid;  // git blob sha1 of the content, 40 hex
  bool lfs = false;
};

// The git-lfs pointer text git would hold for an LFS file, and that pointer's blob sha1
// (the tree `oid` and resolve `ETag` of an LFS file on the Hub).
std::string lfs_pointer_text(std::string_view sha256, std::uint64_t size);
std::string lfs_pointer_text(const StoredFile& file);
std::string lfs_pointer_oid(const StoredFile& file);
// The id the Hub uses as cache etag: sha256 for LFS files, git blob sha1 otherwise.
std::string hub_etag(const StoredFile& file);

struct Commit {
  std::string id;  // 40-hex sha1 of the canonical JSON (set by read/write)
  std::optional<std::string> parent;
  std::string message;
  std::int64_t timestamp = 0;  // seconds since the epoch
  std::map<std::string, StoredFile> files;
};

// Canonical JSON (sorted keys, no whitespace) and the id derived from it.
Result<std::string> canonical_commit_json(const Commit& commit);

struct RefEntry {
  std::string name;    // "main", "v1", "release/2"
  std::string commit;  // 40 hex
};
struct RefList {
  std::vector<RefEntry> branches;
  std::vector<RefEntry> tags;
};

enum class RefKind { branch, tag };

// Branch/tag names: '/'-separated segments of [A-Za-z0-9._-], no '.'-leading segment,
// no "..", at most 200 bytes.
Result<void> validate_ref_name(std::string_view name);

struct StoreEntry {
  std::string path;
  std::optional<StoredFile> file;  // empty for a directory
  std::string directory_oid;       // set for directories
};

// Entries under `prefix` ("" = repo root), sorted by path. Not recursive: direct children
// only; recursive: every file and directory below. entry_not_found when `prefix` is not a
// directory of the commit.
Result<std::vector<StoreEntry>> list_tree(const Commit& commit, std::string_view prefix,
                                          bool recursive);
// One file or directory of a commit, if present.
std::optional<StoreEntry> find_entry(const Commit& commit, std::string_view path);

class LocalStore {
 public:
  explicit LocalStore(std::filesystem::path root) : root_(std::move(root)) {}
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path repo_dir(const trust::RepoId& repo) const;
  bool has_repo(const trust::RepoId& repo) const;

  // Readers. repo_not_found / revision_not_found as the Hub would report them.
  Result<RefList> list_refs(const trust::RepoId& repo) const;
  // `revision`: branch, tag, full 40-hex commit, `refs/heads/<b>` or `refs/tags/<t>`.
  Result<std::string> resolve(const trust::RepoId& repo, std::string_view revision) const;
  Result<Commit> read_commit(const trust::RepoId& repo, std::string_view id) const;
  std::filesystem::path object_path(const trust::RepoId& repo, std::string_view sha256) const;

  // Writers (callers serialise per repo with RepoLock).
  Result<void> create_repo(const trust::RepoId& repo) const;
  // Copies `source` into the object store while hashing it; `repo_path` decides LFS-ness.
  Result<StoredFile> add_object(const trust::RepoId& repo, const std::filesystem::path& source,
                                std::string_view repo_path) const;
  // Writes the commit (parent must exist when set) and returns its id.
  Result<std::string> write_commit(const trust::RepoId& repo, Commit commit) const;
  Result<void> set_ref(const trust::RepoId& repo, RefKind kind, std::string_view name,
                       std::string_view commit) const;
  // Current commit of a ref, or nullopt when the ref does not exist.
  Result<std::optional<std::string>> read_ref(const trust::RepoId& repo, RefKind kind,
                                              std::string_view name) const;

 private:
  std::filesystem::path root_;
};

// Exclusive flock on <repo>/.lock for the lifetime of the object (one publisher at a time).
class RepoLock {
 public:
  static Result<RepoLock> acquire(const LocalStore& store, const trust::RepoId& repo);

 private:
  explicit RepoLock(util::FileLock lock) : lock_(std::move(lock)) {}
  util::FileLock lock_;
};

}  // namespace kernelhub::hub::server
