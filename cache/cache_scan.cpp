// KernelCache::list and sweep_stale_temps: read-only scans of the cache tree (plus the
// removal of abandoned temps).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/cache/repo_folder.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/read_file.hpp"

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

std::uint64_t file_size_or_zero(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : size;
}

// refs/ may nest (refs/pr/1): map commit -> ref names.
std::map<std::string, std::vector<std::string>> read_refs(const fs::path& refs_dir) {
  std::map<std::string, std::vector<std::string>> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(refs_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().lexically_relative(refs_dir).generic_string();
    if (name.find(".tmp") != std::string::npos) continue;  // an in-flight atomic write
    auto read = util::read_small_file(it->path(), 63);
    std::string text = read ? read->substr(0, read->find('\n')) : std::string();
    if (trust::is_lower_hex(text, 40)) out[text].push_back(name);
  }
  return out;
}

CachedRevision scan_revision(const fs::path& snapshot, const fs::path& blobs_dir) {
  CachedRevision rev;
  rev.commit = snapshot.filename().string();
  std::error_code ec;
  for (fs::directory_iterator it(snapshot / "build", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) rev.variants.push_back(it->path().filename().string());
  }
  std::sort(rev.variants.begin(), rev.variants.end());
  std::set<std::string> blobs;
  for (fs::recursive_directory_iterator it(snapshot, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_symlink(ec)) continue;
    const fs::path target = fs::read_symlink(it->path(), ec);
    if (!ec && target.parent_path().filename() == "blobs") blobs.insert(target.filename().string());
  }
  for (const auto& blob : blobs) rev.size_bytes += file_size_or_zero(blobs_dir / blob);
  return rev;
}

}  // namespace

Result<std::vector<CachedRepo>> KernelCache::list() const {
  std::vector<CachedRepo> repos;
  std::error_code ec;
  if (!fs::exists(root_, ec)) return repos;  // nothing cached yet
  fs::directory_iterator it(root_, ec);
  if (ec) return fail(ErrorCode::io, "cannot list " + root_.string() + ": " + ec.message());
  for (fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) return fail(ErrorCode::io, "cannot list " + root_.string() + ": " + ec.message());
    auto id = parse_repo_folder_name(it->path().filename().string());
    if (!id || !it->is_directory(ec)) continue;
    CachedRepo repo{*id, it->path(), {}, 0, version_states(*id)};
    const fs::path blobs = it->path() / "blobs";
    for (fs::directory_iterator b(blobs, ec), bend; !ec && b != bend; b.increment(ec)) {
      const std::string name = b->path().filename().string();
      if (trust::is_lower_hex(name, 40) || trust::is_lower_hex(name, 64))
        repo.size_bytes += file_size_or_zero(b->path());
    }
    const auto refs = read_refs(it->path() / "refs");
    for (fs::directory_iterator s(it->path() / "snapshots", ec), send; !ec && s != send;
         s.increment(ec)) {
      if (!s->is_directory(ec)) continue;
      CachedRevision rev = scan_revision(s->path(), blobs);
      if (const auto r = refs.find(rev.commit); r != refs.end()) rev.refs = r->second;
      std::sort(rev.refs.begin(), rev.refs.end());
      repo.revisions.push_back(std::move(rev));
    }
    ec.clear();
    std::sort(repo.revisions.begin(), repo.revisions.end(),
              [](const CachedRevision& a, const CachedRevision& b) { return a.commit < b.commit; });
    repos.push_back(std::move(repo));
  }
  std::sort(repos.begin(), repos.end(),
            [](const CachedRepo& a, const CachedRepo& b) { return a.repo < b.repo; });
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
