#include "import_transaction.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "kernelhub/util/read_file.hpp"

namespace kernelhub::cache::bundle {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxRefBytes = 4096;

bool exists_no_follow(const fs::path& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

void ImportTransaction::note_missing_folders(const fs::path& path, const fs::path& stop) {
  for (fs::path folder = path;
       folder != stop && folder.has_relative_path() && folder.string().starts_with(stop.string());
       folder = folder.parent_path()) {
    if (exists_no_follow(folder)) return;
    if (std::find(folders_.begin(), folders_.end(), folder) == folders_.end()) {
      folders_.push_back(folder);
    }
  }
}

Result<void> ImportTransaction::commit_blob(BlobWriter& writer, const fs::path& blobs_dir,
                                            util::DirtyDirs& dirty) {
  const fs::path final_path = blobs_dir / writer.expected().etag;
  const bool existed = exists_no_follow(final_path);
  KH_TRY(writer.commit(&dirty));
  if (!existed) files_.push_back(final_path);
  return ok();
}

Result<void> ImportTransaction::write_receipt(const trust::RepoId& repo, std::string_view commit,
                                              std::string_view variant, std::string_view receipt) {
  const fs::path path = cache_.signature_receipt_path(repo, commit, variant);
  note_missing_folders(path.parent_path(), cache_.repo_dir(repo));
  const bool existed = exists_no_follow(path);
  KH_TRY(cache_.write_signature_receipt(repo, commit, variant, receipt));
  if (!existed) files_.push_back(path);
  return ok();
}

Result<void> ImportTransaction::link_snapshot(const trust::RepoId& repo, std::string_view commit,
                                              const std::vector<SnapshotFile>& files,
                                              util::DirtyDirs& dirty) {
  const fs::path snapshots = cache_.repo_dir(repo) / "snapshots";
  const fs::path snapshot = cache_.snapshot_dir(repo, commit);
  // Noted before any link is made, so that a link_snapshot failing half-way is undone too.
  for (const auto& file : files) {
    const fs::path link = snapshot / file.path;
    note_missing_folders(link.parent_path(), snapshots);
    if (!exists_no_follow(link)) files_.push_back(link);
  }
  return cache_.link_snapshot(repo, commit, files, &dirty);
}

Result<void> ImportTransaction::write_ref(const trust::RepoId& repo, const std::string& ref,
                                          std::string_view commit) {
  const fs::path refs = cache_.repo_dir(repo) / "refs";
  const fs::path path = refs / ref;
  note_missing_folders(path.parent_path(), refs);
  // What it held before this import, once (a ref the manifest names twice is restored to that).
  if (std::none_of(refs_.begin(), refs_.end(),
                   [&](const RefBefore& r) { return r.path == path; })) {
    RefBefore before{path, exists_no_follow(path), std::nullopt};
    if (before.existed) {
      if (auto text = util::read_small_file(path, kMaxRefBytes)) before.content = std::move(*text);
    }
    refs_.push_back(std::move(before));
  }
  return cache_.write_ref(repo, ref, commit);
}

void ImportTransaction::roll_back() {
  if (done_) return;
  done_ = true;
  // Each undo is of its own file, so any order will do; folders go last.
  for (const auto& ref : refs_) {
    if (!ref.existed) {
      ::unlink(ref.path.c_str());
    } else if (ref.content) {
      (void)util::write_file_atomic(ref.path, *ref.content);
    }  // else: there was something it could not read; it never was replaced either
  }
  for (const auto& file : files_) ::unlink(file.c_str());
  // Deepest first: a folder's path is longer than its parent's. Only empty ones go (rmdir),
  // so whatever another process put there meanwhile stays.
  std::sort(folders_.begin(), folders_.end(), [](const fs::path& a, const fs::path& b) {
    return a.native().size() > b.native().size();
  });
  for (const auto& folder : folders_) ::rmdir(folder.c_str());
}

}  // namespace kernelhub::cache::bundle
