// KernelCache::list (over scan_repo_usage) and sweep_stale_temps: scans of the cache tree
// (the latter removes abandoned temps).
#include <sys/stat.h>
#include <unistd.h>

#include "kernelhub/cache/cache_usage.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/cache/repo_folder.hpp"
#include "kernelhub/trust/digest.hpp"

namespace kernelhub::cache {

namespace fs = std::filesystem;

namespace {

// `<etag>.<8hex>.incomplete` (BlobWriter) or `<name>.<8hex>.tmp` (atomic writes, staged links).
bool is_temp_name(std::string_view name) {
  for (const std::string_view suffix :
       {std::string_view(".incomplete"), std::string_view(".tmp")}) {
    if (!name.ends_with(suffix)) continue;
    const auto stem = name.substr(0, name.size() - suffix.size());
    if (stem.size() < 10 || stem[stem.size() - 9] != '.') return false;
    return trust::is_lower_hex(stem.substr(stem.size() - 8), 8);
  }
  return false;
}

}  // namespace

Result<std::vector<CachedRepo>> KernelCache::list() const {
  std::vector<CachedRepo> repos;
  std::error_code ec;
  if (!fs::exists(root_, ec)) return repos;  // nothing cached yet
  if (!fs::is_directory(root_, ec))
    return fail(ErrorCode::io, "cannot list " + root_.string() + ": not a folder");
  for (const auto& id : cached_repo_ids(*this)) {
    const RepoUsage usage = scan_repo_usage(*this, id);
    CachedRepo repo{id, usage.path, {}, usage.size_bytes, version_states(id)};
    for (const auto& snap : usage.snapshots) {
      CachedRevision rev{snap.commit, snap.refs, {}, snap.size_bytes};
      for (const auto& v : snap.variants) {
        rev.variants.push_back(
            {v.name, v.size_bytes,
             std::chrono::duration_cast<std::chrono::seconds>(v.last_used.time_since_epoch())
                 .count(),
             v.pinned});
      }
      repo.revisions.push_back(std::move(rev));
    }
    repos.push_back(std::move(repo));
  }
  return repos;
}

std::size_t KernelCache::sweep_stale_temps(std::chrono::seconds age) const {
  const auto cutoff = fs::file_time_type::clock::now() - age;
  std::size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    if (!parse_repo_folder_name(it->path().filename().string())) continue;
    // Every temp a crashed writer can leave: blob downloads in blobs/, atomic ref and
    // .no_exist writes, and snapshot symlinks staged next to their final name.
    std::error_code wec;
    for (fs::recursive_directory_iterator w(it->path(), fs::directory_options::none, wec), wend;
         !wec && w != wend; w.increment(wec)) {
      const fs::path& path = w->path();
      std::error_code fec;
      if (w->is_directory(fec) && !w->is_symlink(fec)) continue;
      if (!is_temp_name(path.filename().string())) continue;
      // lstat: the age of a staged symlink is its own, not its target's.
      struct stat st {};
      if (::lstat(path.c_str(), &st) != 0) continue;
      const auto mtime =
          fs::file_time_type::clock::from_sys(std::chrono::system_clock::from_time_t(st.st_mtime));
      if (age.count() > 0 && mtime >= cutoff) continue;
      if (::unlink(path.c_str()) == 0) ++removed;
    }
  }
  return removed;
}

}  // namespace kernelhub::cache
