// kernels.lock, both formats the `kernels` library has written:
// - `kernels` (0.17+): [{"dependency": {"repo-id", "version"|"revision"}, "lock": {"commit"}}],
//   sorted by dependency, 2-space JSON, no final newline;
// - `legacy` (<= 0.16): [{"repo_id", "sha", "variants": {V: {"hash", "hash_type"}}}] with a
//   per-variant `git_lfs_concat` content hash.
// Reading is strict (unknown members, duplicates and malformed commits are errors that name
// the entry); writing is byte for byte what `kernels lock` writes.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernelhub/trust/kernel_dependency.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

inline constexpr std::size_t kMaxLockfileBytes = 4u << 20;

enum class LockFormat { kernels, legacy };

struct LockEntry {
  // The kernels format names what was locked; the legacy format does not (only the repo).
  RepoId repo;
  std::optional<KernelDependency> dependency;
  std::string commit;  // 40 or 64 lowercase hex
  // Legacy format: variant -> "sha256-<hex>" (git_lfs_concat). Empty in the kernels format.
  std::map<std::string, std::string> variant_hashes;
};

struct Lockfile {
  LockFormat format = LockFormat::kernels;
  std::vector<LockEntry> entries;

  // The entry for `repo`. Like `kernels`, a project locks one version per top-level repo,
  // so the first entry naming the repo answers; nullptr when the repo is not locked.
  const LockEntry* find(const RepoId& repo) const;
};

// A git object id as a lock pins it: 40 (sha1) or 64 (sha256) lowercase hex digits.
bool is_git_object_id(std::string_view text) noexcept;

// malformed_lockfile for anything but one of the two formats, naming the entry and member.
Result<Lockfile> parse_lockfile(std::string_view text);
// Reads and parses a lockfile (size-capped); io when it cannot be read.
Result<Lockfile> read_lockfile(const std::string& path);
// In `format`; entries are sorted as `kernels` sorts them. The kernels format needs every
// entry's dependency, the legacy format every entry's variant hashes.
Result<std::string> write_lockfile(const Lockfile& lock, LockFormat format);

// The legacy per-variant hash over (variant-relative path, object id hex) pairs: sha256 of
// each path's UTF-8 bytes followed by the id's raw bytes, in byte order of the paths. The
// object id is the LFS sha256 for LFS files, else the git blob sha1.
std::string git_lfs_concat_hash(std::vector<std::pair<std::string, std::string>> files);

// Compares a fetched variant's files (repo-relative path build/<variant>/..., object id)
// with a legacy entry's hash for that variant. hash_mismatch names the repo, commit and
// variant; a variant the entry does not list is not_locked. Nothing to check (kernels
// format): ok.
Result<void> check_locked_variant(const LockEntry& entry, const std::string& variant,
                                  const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace kernelhub::trust
