#include "kernelhub/cache/cache_usage.hpp"

#include <sys/stat.h>

#include <algorithm>

#include "cache_tree.hpp"
#include "kernelhub/cache/repo_folder.hpp"

namespace kernelhub::cache {
namespace {

namespace fs = std::filesystem;

// refs/ may nest (refs/pr/1): commit -> ref names. In-flight atomic writes are skipped.
std::map<std::string, std::vector<std::string>> read_refs(const fs::path& refs_dir) {
  std::map<std::string, std::vector<std::string>> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(refs_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    const std::string name = it->path().lexically_relative(refs_dir).generic_string();
    if (name.ends_with(".tmp")) continue;
    if (auto commit = tree::read_ref_file(it->path())) out[*commit].push_back(name);
  }
  for (auto& [commit, names] : out) std::sort(names.begin(), names.end());
  return out;
}

SnapshotUsage scan_snapshot(const KernelCache& cache, const RepoUsage& repo,
                            const fs::path& snapshot) {
  SnapshotUsage snap;
  snap.commit = snapshot.filename().string();
  std::error_code ec;
  std::set<std::string> in_variants;
  for (fs::directory_iterator it(snapshot / "build", ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec) || it->is_symlink(ec)) continue;
    VariantUsage variant;
    variant.name = it->path().filename().string();
    variant.blobs = tree::linked_blobs(it->path());
    for (const auto& blob : variant.blobs) {
      if (const auto size = repo.blobs.find(blob); size != repo.blobs.end())
        variant.size_bytes += size->second;
    }
    const VariantRef ref{repo.repo, snap.commit, variant.name};
    if (const auto used = recorded_use(cache, ref)) {
      variant.last_used = *used;
      variant.recorded = true;
    } else {
      variant.last_used = tree::mtime_of(it->path());
    }
    variant.pinned = std::any_of(repo.pins.begin(), repo.pins.end(),
                                 [&](const Pin& p) { return p.covers(snap.commit, variant.name); });
    in_variants.insert(variant.blobs.begin(), variant.blobs.end());
    snap.variants.push_back(std::move(variant));
  }
  std::sort(snap.variants.begin(), snap.variants.end(),
            [](const VariantUsage& a, const VariantUsage& b) { return a.name < b.name; });
  const auto all = tree::linked_blobs(snapshot);
  std::set_difference(all.begin(), all.end(), in_variants.begin(), in_variants.end(),
                      std::inserter(snap.other_blobs, snap.other_blobs.end()));
  for (const auto& blob : all) {
    if (const auto size = repo.blobs.find(blob); size != repo.blobs.end())
      snap.size_bytes += size->second;
  }
  return snap;
}

}  // namespace

std::vector<trust::RepoId> cached_repo_ids(const KernelCache& cache) {
  std::vector<trust::RepoId> out;
  std::error_code ec;
  for (fs::directory_iterator it(cache.root(), ec), end; !ec && it != end; it.increment(ec)) {
    auto id = parse_repo_folder_name(it->path().filename().string());
    if (id && it->is_directory(ec) && !it->is_symlink(ec)) out.push_back(*id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

RepoUsage scan_repo_usage(const KernelCache& cache, const trust::RepoId& repo) {
  RepoUsage usage;
  usage.repo = repo;
  usage.path = cache.repo_dir(repo);
  if (auto pins = read_pins(cache, repo)) {
    usage.pins = std::move(*pins);
  } else {
    usage.pins_damaged = pins.error();
  }
  std::error_code ec;
  for (fs::directory_iterator it(usage.path / "blobs", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!tree::is_blob_name(name)) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;
    const auto size = S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
    usage.blobs.emplace(name, size);
    usage.size_bytes += size;
  }
  ec.clear();
  const auto refs = read_refs(usage.path / "refs");
  for (fs::directory_iterator it(usage.path / "snapshots", ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_symlink(ec)) {
      // Not ours (never followed): a snapshot without variants, for gc to remove.
      usage.snapshots.push_back({it->path().filename().string(), {}, {}, {}, 0});
      continue;
    }
    if (!it->is_directory(ec)) continue;
    SnapshotUsage snap = scan_snapshot(cache, usage, it->path());
    if (const auto r = refs.find(snap.commit); r != refs.end()) snap.refs = r->second;
    usage.snapshots.push_back(std::move(snap));
  }
  std::sort(usage.snapshots.begin(), usage.snapshots.end(),
            [](const SnapshotUsage& a, const SnapshotUsage& b) { return a.commit < b.commit; });
  return usage;
}

}  // namespace kernelhub::cache
