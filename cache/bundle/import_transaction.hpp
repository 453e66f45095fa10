// An import's publish as one transaction: each step (a blob renamed into blobs/, a signature
// receipt, a snapshot's links, a ref) records what it added, and unless the whole publish
// succeeds (done()) the destructor takes it all back: the blobs this import was first to
// publish, the links and folders it made, its receipts, and every ref it wrote restored.
// What was in the cache before (a blob, a link, a folder) is never removed.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/cache/blob_writer.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::cache::bundle {

class ImportTransaction {
 public:
  explicit ImportTransaction(const KernelCache& cache) : cache_(cache) {}
  ~ImportTransaction() { roll_back(); }
  ImportTransaction(const ImportTransaction&) = delete;
  ImportTransaction& operator=(const ImportTransaction&) = delete;

  // `writer` finished; its directory joins `dirty` (synced by the caller before any link).
  Result<void> commit_blob(BlobWriter& writer, const std::filesystem::path& blobs_dir,
                           util::DirtyDirs& dirty);
  Result<void> write_receipt(const trust::RepoId& repo, std::string_view commit,
                             std::string_view variant, std::string_view receipt);
  Result<void> link_snapshot(const trust::RepoId& repo, std::string_view commit,
                             const std::vector<SnapshotFile>& files, util::DirtyDirs& dirty);
  Result<void> write_ref(const trust::RepoId& repo, const std::string& ref,
                         std::string_view commit);
  // Everything is published: nothing is taken back.
  void done() { done_ = true; }
  // Takes back what was published so far (the destructor's job, for a caller that must see
  // it gone first); once only.
  void roll_back();

 private:
  struct RefBefore {
    std::filesystem::path path;
    bool existed = false;
    std::optional<std::string> content;  // what it held, when it could be read
  };
  // Records the folders of `path` below `stop` that do not exist yet (deepest first).
  void note_missing_folders(const std::filesystem::path& path, const std::filesystem::path& stop);

  const KernelCache& cache_;
  bool done_ = false;
  std::vector<std::filesystem::path> files_;    // blobs, links, receipts this import added
  std::vector<std::filesystem::path> folders_;  // folders it made, deepest first per step
  std::vector<RefBefore> refs_;
};

}  // namespace kernelhub::cache::bundle
