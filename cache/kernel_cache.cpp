#include "kernelhub/cache/kernel_cache.hpp"
#include "cache_tree.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <sstream>

#include "kernelhub/cache/repo_folder.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/kernel_dependency.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/read_file.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::cache {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kCacheDirTag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by kernelhub.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n";

bool is_commit(std::string_view text) { return trust::is_lower_hex(text, 40); }

bool is_link_to(const fs::path& link, std::string_view target) {
  std::array<char, 512> buf{};
  const ssize_t n = ::readlink(link.c_str(), buf.data(), buf.size());
  return n >= 0 && std::string_view(buf.data(), static_cast<std::size_t>(n)) == target;
}

}  // namespace

KernelCache::KernelCache(fs::path root) : root_(std::move(root)) {}

fs::path KernelCache::repo_dir(const trust::RepoId& repo) const {
  return root_ / repo_folder_name(repo);
}
fs::path KernelCache::blobs_dir(const trust::RepoId& repo) const {
  return repo_dir(repo) / "blobs";
}
fs::path KernelCache::snapshot_dir(const trust::RepoId& repo, std::string_view commit) const {
  return repo_dir(repo) / "snapshots" / std::string(commit);
}

bool KernelCache::is_known_missing(const trust::RepoId& repo, std::string_view commit,
                                   std::string_view path) const {
  std::error_code ec;
  return fs::is_regular_file(repo_dir(repo) / ".no_exist" / std::string(commit) / std::string(path),
                             ec);
}

Result<void> KernelCache::mark_missing(const trust::RepoId& repo, std::string_view commit,
                                       std::string_view path) const {
  KH_TRY_ASSIGN(auto safe, trust::validate_repo_path(path));
  const fs::path marker = repo_dir(repo) / ".no_exist" / std::string(commit) / safe;
  // A hint, not a publish: losing it to a power cut costs one question to the Hub, so
  // nothing here is fsynced (huggingface_hub does not either).
  KH_TRY(util::make_dirs(marker.parent_path()));
  return util::write_file_atomic(marker, "", 0644, util::Durability::none);
}

Result<void> KernelCache::prepare_repo(const trust::RepoId& repo) const {
  util::DirtyDirs dirty;  // new folders are durable before anything is published into them
  KH_TRY(dirty.create(root_));
  const fs::path tag = root_ / "CACHEDIR.TAG";
  std::error_code ec;
  if (!fs::exists(tag, ec)) KH_TRY(util::write_file_atomic(tag, kCacheDirTag));
  for (const char* sub : {"blobs", "refs", "snapshots"}) KH_TRY(dirty.create(repo_dir(repo) / sub));
  return dirty.sync();
}

bool KernelCache::has_blob(const trust::RepoId& repo, std::string_view etag) const {
  if (!tree::is_blob_name(etag)) return false;
  std::error_code ec;
  return fs::is_regular_file(blobs_dir(repo) / std::string(etag),
                             ec);  // follows a shared-store symlink
}

std::optional<std::string> KernelCache::read_ref(const trust::RepoId& repo,
                                                 std::string_view ref) const {
  if (!trust::validate_repo_path(ref)) return std::nullopt;
  for (const RepoKind kind : {RepoKind::kernels, RepoKind::models}) {
    if (auto sha =
            tree::read_ref_file(root_ / repo_folder_name(repo, kind) / "refs" / std::string(ref)))
      return sha;
  }
  return std::nullopt;
}

std::vector<int> KernelCache::cached_versions(const trust::RepoId& repo) const {
  std::vector<int> versions;
  for (const RepoKind kind : {RepoKind::kernels, RepoKind::models}) {
    const fs::path refs = root_ / repo_folder_name(repo, kind) / "refs";
    std::error_code ec;
    for (fs::directory_iterator it(refs, ec), end; !ec && it != end; it.increment(ec)) {
      const auto version = trust::version_of_branch(it->path().filename().string());
      if (!version || *version > 1'000'000 || !tree::read_ref_file(it->path())) continue;
      versions.push_back(static_cast<int>(*version));
    }
  }
  std::sort(versions.begin(), versions.end());
  versions.erase(std::unique(versions.begin(), versions.end()), versions.end());
  return versions;
}

Result<void> KernelCache::write_ref(const trust::RepoId& repo, std::string_view ref,
                                    std::string_view commit) const {
  KH_TRY(trust::validate_repo_path(ref));
  if (!is_commit(commit)) {
    return fail(ErrorCode::invalid_argument, "ref target '" + trust::sanitize_for_message(commit) +
                                                 "' is not a 40-hex commit sha");
  }
  const fs::path path = repo_dir(repo) / "refs" / std::string(ref);
  if (tree::read_ref_file(path) == std::string(commit))
    return ok();  // unchanged: read-only caches stay usable
  util::DirtyDirs dirty;
  KH_TRY(dirty.create(path.parent_path()));
  KH_TRY(util::write_file_atomic(path, commit));  // fsyncs the ref's own folder
  return dirty.sync();
}

Result<void> KernelCache::link_snapshot(const trust::RepoId& repo, std::string_view commit,
                                        const std::vector<SnapshotFile>& files,
                                        util::DirtyDirs* caller_dirty) const {
  if (!is_commit(commit)) {
    return fail(
        ErrorCode::invalid_argument,
        "snapshot commit '" + trust::sanitize_for_message(commit) + "' is not a 40-hex sha");
  }
  const fs::path snapshot = snapshot_dir(repo, commit);
  // Every folder a link is renamed into, and the parent of every folder made here, is
  // fsynced before returning: the ref written next must never outlive a link after a power
  // cut (a lost metadata.json link would skip the digest check offline).
  util::DirtyDirs own;
  util::DirtyDirs& dirty = caller_dirty ? *caller_dirty : own;
  for (const auto& file : files) {
    KH_TRY(trust::validate_repo_path(file.path));
    if (!has_blob(repo, file.etag)) {
      return fail(ErrorCode::entry_not_found, "blob " + trust::sanitize_for_message(file.etag) +
                                                  " for '" + file.path + "' is not in the cache");
    }
    // snapshots/<sha>/<a>/<b>/f -> ../../../../blobs/<etag>: two levels plus one per '/'.
    std::string target;
    for (auto n = 2 + std::count(file.path.begin(), file.path.end(), '/'); n > 0; --n)
      target += "../";
    target += "blobs/" + file.etag;
    const fs::path link = snapshot / file.path;
    KH_TRY(dirty.create(link.parent_path()));
    if (is_link_to(link, target)) continue;  // already in place: the folder stays clean
    // A temp link renamed over the final name: readers see the old or the new link, never none.
    const fs::path temp = link.parent_path() /
                          ("." + link.filename().string() + "." + util::random_suffix() + ".tmp");
    if (::symlink(target.c_str(), temp.c_str()) != 0)
      return util::errno_error(errno, "cannot create symlink", temp);
    if (::rename(temp.c_str(), link.c_str()) != 0) {
      const int err = errno;
      ::unlink(temp.c_str());
      return util::errno_error(err, "cannot place symlink", link);
    }
    dirty.add(link.parent_path());
  }
  return caller_dirty ? ok() : dirty.sync();
}

std::optional<FileLock> KernelCache::try_lock_instance() const {
  if (!util::make_dirs(root_ / ".locks")) return std::nullopt;
  auto lock = FileLock::try_acquire(root_ / ".locks" / "kernelhubd.lock", /*create=*/true);
  if (!lock) return std::nullopt;
  const fs::path legacy = root_ / ".kernelhubd.lock";
  if (::access(legacy.c_str(), F_OK) == 0) {
    // Held: an older kernelhubd serves this cache. Free: a leftover, removed while we hold it.
    const auto old = FileLock::try_acquire(legacy, /*create=*/false);
    if (!old) return std::nullopt;
    ::unlink(legacy.c_str());
  }
  return lock;
}

fs::path KernelCache::state_dir(const trust::RepoId& repo) const {
  return repo_dir(repo) / ".kernelhub";
}

fs::path KernelCache::usage_dir(const trust::RepoId& repo, std::string_view commit) const {
  return state_dir(repo) / "used" / std::string(commit);
}

fs::path KernelCache::usage_marker_path(const trust::RepoId& repo, std::string_view commit,
                                        std::string_view variant) const {
  return usage_dir(repo, commit) / std::string(variant);
}

fs::path KernelCache::pins_path(const trust::RepoId& repo) const {
  return state_dir(repo) / "pins.json";
}

fs::path KernelCache::trash_dir(const trust::RepoId& repo) const {
  return state_dir(repo) / "trash";
}

Result<FileLock> KernelCache::hold_repo(const trust::RepoId& repo) const {
  const fs::path dir = root_ / ".locks" / repo_folder_name(repo);
  KH_TRY(util::make_dirs(dir));
  return FileLock::acquire_shared(dir / "in-use.lock", 0664);
}

std::optional<FileLock> KernelCache::try_lock_repo_for_removal(const trust::RepoId& repo) const {
  const fs::path dir = root_ / ".locks" / repo_folder_name(repo);
  if (!util::make_dirs(dir)) return std::nullopt;
  return FileLock::try_acquire(dir / "in-use.lock", /*create=*/true, 0664);
}

Result<FileLock> KernelCache::lock(const trust::RepoId& repo, std::string_view name) const {
  KH_TRY(trust::validate_repo_path(name));
  if (name.find('/') != std::string_view::npos) {
    return fail(ErrorCode::invalid_argument,
                "lock name '" + std::string(name) + "' must not contain '/'");
  }
  const fs::path dir = root_ / ".locks" / repo_folder_name(repo);
  KH_TRY(util::make_dirs(dir));
  return FileLock::acquire(dir / (std::string(name) + ".lock"), 0664);
}

}  // namespace kernelhub::cache
