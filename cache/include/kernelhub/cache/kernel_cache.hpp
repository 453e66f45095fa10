// The HF-compatible cache: <root>/kernels--{org}--{name}/{blobs,refs,snapshots}, readable by
// huggingface_hub and the `kernels` library, and able to read what they wrote (legacy
// `models--` folders are read too).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/file_lock.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache {

// KERNELS_CACHE, else HF_HUB_CACHE (HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::filesystem::path resolve_cache_root(const util::Environment& env);

struct SnapshotFile {
  std::string path;  // repo-relative, already validated (see safe_path.hpp)
  std::string etag;  // blobs/<etag> must exist
};

struct CachedVariant {
  std::string name;              // folder name under snapshots/<commit>/build/
  std::uint64_t size_bytes = 0;  // the blobs it links (blobs shared with others included)
  std::int64_t last_used = 0;    // unix seconds: its last hand-out, else when it was published
  bool pinned = false;
};

struct CachedRevision {
  std::string commit;
  std::vector<std::string> refs;        // refs pointing at this commit (e.g. "v1", "main")
  std::vector<CachedVariant> variants;  // by name
  std::uint64_t size_bytes = 0;         // sum of the blobs this snapshot references
};

// What kernelhub accepted for one version branch of a repo: the commit it serves for vN, and
// the last commit the Hub offered for vN that was refused because it does not descend from
// the accepted one (a rollback or a force-push).
struct VersionState {
  std::uint64_t version = 0;
  std::string accepted;                // 40 hex
  std::optional<std::string> refused;  // 40 hex
};

struct CachedRepo {
  trust::RepoId repo;
  std::filesystem::path path;
  std::vector<CachedRevision> revisions;
  std::uint64_t size_bytes = 0;        // size of blobs/
  std::vector<VersionState> versions;  // accepted version commits, by version
};

// The cache's locks: .locks/<repo_folder>/<name>.lock (mode 0664, never deleted) cooperate
// with huggingface_hub; correctness never depends on them.
using util::FileLock;

class KernelCache {
 public:
  explicit KernelCache(std::filesystem::path root);

  const std::filesystem::path& root() const { return root_; }
  // Mode of blobs at publish (0: 0644 minus umask, like huggingface_hub). The daemon's
  // shared cache sets 0444: nothing in it is writable, not even by its owner by accident.
  void set_published_blob_mode(unsigned mode) { published_blob_mode_ = mode; }
  unsigned published_blob_mode() const { return published_blob_mode_; }
  std::filesystem::path repo_dir(const trust::RepoId& repo) const;  // kernels--org--name
  std::filesystem::path blobs_dir(const trust::RepoId& repo) const;
  std::filesystem::path snapshot_dir(const trust::RepoId& repo, std::string_view commit) const;
  // <repo folder>/.kernelhub: kernelhub's own state beside the HF layout (ignored by
  // huggingface_hub's scan): version states, signature receipts, usage markers, pins, and
  // the trash an eviction empties.
  std::filesystem::path state_dir(const trust::RepoId& repo) const;
  // .kernelhub/used/<commit>/<variant> (see usage.hpp), .kernelhub/pins.json (pins.hpp),
  // .kernelhub/trash/ (eviction.hpp).
  std::filesystem::path usage_dir(const trust::RepoId& repo, std::string_view commit) const;
  std::filesystem::path usage_marker_path(const trust::RepoId& repo, std::string_view commit,
                                          std::string_view variant) const;
  std::filesystem::path pins_path(const trust::RepoId& repo) const;
  std::filesystem::path trash_dir(const trust::RepoId& repo) const;

  // Creates root (with CACHEDIR.TAG), the repo folder, blobs/, refs/, snapshots/.
  Result<void> prepare_repo(const trust::RepoId& repo) const;
  bool has_blob(const trust::RepoId& repo, std::string_view etag) const;

  // Reads refs/<ref> of kernels--…, falling back to legacy models--…; nullopt if absent
  // or not a 40-hex sha.
  std::optional<std::string> read_ref(const trust::RepoId& repo, std::string_view ref) const;
  // All refs/v<N> branches that exist in the cache (offline version lookup).
  std::vector<int> cached_versions(const trust::RepoId& repo) const;
  // Atomic (temp + rename), no trailing newline. Written last, after the snapshot.
  Result<void> write_ref(const trust::RepoId& repo, std::string_view ref,
                         std::string_view commit) const;

  // The state of version branch v<version>: <repo folder>/.kernelhub/v<N>.json, owned by
  // whoever owns the cache (the daemon for its shared one); ignored by huggingface_hub. A
  // missing or unreadable file is nullopt (nothing accepted yet).
  std::optional<VersionState> read_version_state(const trust::RepoId& repo,
                                                 std::uint64_t version) const;
  std::vector<VersionState> version_states(const trust::RepoId& repo) const;
  Result<void> write_version_state(const trust::RepoId& repo, const VersionState& state) const;

  // The signature receipt of build/<variant> at `commit`: <repo folder>/.kernelhub/
  // signatures/<commit>/<variant>.json. nullopt when absent, or when it or a folder above
  // it (up to .kernelhub) is not owned by this process's user or is writable by others: a
  // receipt is trusted only from where no one else can have written it.
  std::filesystem::path signature_receipts_dir(const trust::RepoId& repo,
                                               std::string_view commit) const;
  std::filesystem::path signature_receipt_path(const trust::RepoId& repo, std::string_view commit,
                                               std::string_view variant) const;
  std::optional<std::string> read_signature_receipt(const trust::RepoId& repo,
                                                    std::string_view commit,
                                                    std::string_view variant) const;
  Result<void> write_signature_receipt(const trust::RepoId& repo, std::string_view commit,
                                       std::string_view variant, std::string_view content) const;

  // Creates snapshots/<commit>/<path> -> relative symlink to ../../blobs/<etag> for each
  // file, each replaced atomically (temp symlink + rename). Every blob must exist. On
  // success every folder that gained an entry is fsynced (see util::DirtyDirs), or with `dirty`
  // added to the caller's one sync for the whole publish.
  Result<void> link_snapshot(const trust::RepoId& repo, std::string_view commit,
                             const std::vector<SnapshotFile>& files,
                             util::DirtyDirs* dirty = nullptr) const;

  // huggingface_hub's `.no_exist/<commit>/<path>` markers: the Hub said this optional file
  // does not exist at this commit. Commits are immutable, so the answer holds for good.
  bool is_known_missing(const trust::RepoId& repo, std::string_view commit,
                        std::string_view path) const;
  Result<void> mark_missing(const trust::RepoId& repo, std::string_view commit,
                            std::string_view path) const;

  Result<FileLock> lock(const trust::RepoId& repo, std::string_view name) const;

  // The repo's use lock, .locks/<repo folder>/in-use.lock: every fetch holds it shared from
  // the moment it looks at the repo's cached files until it has published (and, embedded,
  // opened the files it hands out), so a removal never takes a blob a fetch is about to link
  // or a variant it is about to open. Removals (gc, eviction) take it exclusive without
  // waiting and leave a repo in use alone: nullopt then.
  Result<FileLock> hold_repo(const trust::RepoId& repo) const;
  std::optional<FileLock> try_lock_repo_for_removal(const trust::RepoId& repo) const;

  // The lock one kernelhubd holds on this cache for its lifetime: .locks/kernelhubd.lock
  // (huggingface_hub's cache scan skips .locks/). nullopt when another process holds it, or
  // holds the root `.kernelhubd.lock` that earlier builds used; a free one of those is
  // removed, so that the cache scans clean.
  std::optional<FileLock> try_lock_instance() const;

  Result<std::vector<CachedRepo>> list() const;

  // Removes *.incomplete temps older than `age` in every blobs/ folder; returns the count.
  std::size_t sweep_stale_temps(std::chrono::seconds age) const;

 private:
  std::filesystem::path root_;
  unsigned published_blob_mode_ = 0;
};

}  // namespace kernelhub::cache
