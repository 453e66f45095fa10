#include "eviction_steps.hpp"

#include "cache_tree.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "kernelhub/cache/pins.hpp"
#include "kernelhub/util/fs_util.hpp"

namespace kernelhub::cache::steps {
namespace {

namespace fs = std::filesystem;

bool is_real_dir(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool has_variant_folder(const fs::path& snapshot) {
  std::error_code ec;
  for (fs::directory_iterator it(snapshot / "build", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) return true;
  }
  return false;
}

bool is_link(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// A snapshot entry with no variant folder: a folder without build/<variant>, or a symlink
// (never followed; renaming it moves the link, not its target).
bool is_bare_snapshot(const fs::path& snapshot) {
  if (is_link(snapshot)) return true;
  return is_real_dir(snapshot) && !has_variant_folder(snapshot);
}

// rename(2) into the trash: the folder is whole where it was, or gone from there.
Result<void> move_to_trash(const fs::path& from, const fs::path& trash, const std::string& name,
                           util::DirtyDirs& dirty) {
  KH_TRY(dirty.create(trash));
  const fs::path to = trash / (name + "." + util::random_suffix());
  if (std::rename(from.c_str(), to.c_str()) != 0)
    return util::errno_error(errno, "cannot move into the trash", from);
  dirty.add(from.parent_path());
  dirty.add(trash);
  return ok();
}

// Unlinks every ref file naming `commit` (refs/ may nest).
void remove_refs_to(const fs::path& refs_dir, const std::string& commit, util::DirtyDirs& dirty) {
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (fs::recursive_directory_iterator it(refs_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    if (tree::read_ref_file(it->path()) == commit) doomed.push_back(it->path());
  }
  for (const auto& path : doomed) {
    if (::unlink(path.c_str()) == 0) dirty.add(path.parent_path());
  }
}

void empty_trash(const fs::path& trash) {
  std::error_code ec;
  for (fs::directory_iterator it(trash, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code rec;
    fs::remove_all(it->path(), rec);  // symlinks are removed, never followed
  }
}

}  // namespace

WallClock::time_point snapshot_time(const KernelCache& cache, const trust::RepoId& repo,
                                    const std::string& commit) {
  return tree::mtime_of(cache.snapshot_dir(repo, commit));
}

bool trash_has_entries(const KernelCache& cache, const trust::RepoId& repo) {
  std::error_code ec;
  return fs::exists(cache.trash_dir(repo), ec) && !fs::is_empty(cache.trash_dir(repo), ec);
}

Result<RepoOutcome> remove_from_repo(const KernelCache& cache, const trust::RepoId& repo,
                                     const std::vector<Removal>& removals,
                                     const std::function<void(const VariantRef&)>& on_remove) {
  RepoOutcome outcome;
  const auto lock = cache.try_lock_repo_for_removal(repo);
  if (!lock) {
    outcome.busy = true;
    return outcome;
  }
  const fs::path dir = cache.repo_dir(repo);
  const fs::path trash = cache.trash_dir(repo);
  empty_trash(trash);  // what a crash left
  const auto pins = read_pins(cache, repo);
  if (!pins) return outcome;  // re-read under the lock: damaged now, so nothing goes
  const auto pinned = [&](const std::string& commit, const std::string& variant) {
    return std::any_of(pins->begin(), pins->end(), [&](const Pin& p) {
      return variant.empty() ? p.commit == commit : p.covers(commit, variant);
    });
  };

  util::DirtyDirs dirty;
  std::set<std::string> touched;
  for (const auto& removal : removals) {
    const fs::path snapshot = cache.snapshot_dir(repo, removal.commit);
    if (pinned(removal.commit, removal.variant)) continue;
    const VariantRef ref{repo, removal.commit, removal.variant};
    if (removal.variant.empty()) {
      if (!is_bare_snapshot(snapshot)) continue;
      if (on_remove) on_remove(ref);
    } else {
      const fs::path folder = snapshot / "build" / removal.variant;
      if (!is_real_dir(folder)) continue;
      if (removal.unless_used_since) {
        const auto used = recorded_use(cache, ref).value_or(tree::mtime_of(folder));
        if (used > removal.planned_use) continue;  // used since it was chosen
      }
      if (on_remove) on_remove(ref);
      KH_TRY(move_to_trash(folder, trash, removal.commit + "." + removal.variant, dirty));
      ::unlink(cache.usage_marker_path(repo, removal.commit, removal.variant).c_str());
      ::unlink(cache.signature_receipt_path(repo, removal.commit, removal.variant).c_str());
    }
    outcome.removed.insert({removal.commit, removal.variant});
    touched.insert(removal.commit);
  }
  // A snapshot left without a variant goes whole; the refs naming it go before it, so no ref
  // ever names a missing snapshot. The version state (.kernelhub/vN.json) stays: the
  // rollback guard still knows what it accepted.
  for (const auto& commit : touched) {
    const fs::path snapshot = cache.snapshot_dir(repo, commit);
    if (!is_bare_snapshot(snapshot) || pinned(commit, "")) continue;
    remove_refs_to(dir / "refs", commit, dirty);
    KH_TRY(dirty.sync());
    KH_TRY(move_to_trash(snapshot, trash, commit, dirty));
    std::error_code ec;
    fs::remove_all(cache.usage_dir(repo, commit), ec);
    fs::remove_all(cache.signature_receipts_dir(repo, commit), ec);
    fs::remove_all(dir / ".no_exist" / commit, ec);
    ++outcome.removed_snapshots;
  }
  KH_TRY(dirty.sync());
  empty_trash(trash);

  // Blobs last, once nothing links them.
  const auto linked = tree::linked_blobs(dir / "snapshots");
  std::error_code ec;
  for (fs::directory_iterator it(dir / "blobs", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!tree::is_blob_name(name) || linked.contains(name)) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    if (::unlink(it->path().c_str()) != 0)
      return util::errno_error(errno, "cannot remove blob", it->path());
    ++outcome.removed_blobs;
    if (S_ISREG(st.st_mode)) outcome.freed_bytes += static_cast<std::uint64_t>(st.st_size);
  }
  return outcome;
}

}  // namespace kernelhub::cache::steps
