// The one fd hand-out of the cache, used by the daemon (fds sent over SCM_RIGHTS) and by the
// embedded client (fds opened in-process): open each file of a published manifest beneath
// the cache root without following any symlink, and check it before anyone reads it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::cache {

// One file of a manifest: snapshots/<commit>/<path> links to blobs/<etag>, of `size` bytes.
struct HandoutFile {
  std::string path;  // repo-relative, e.g. build/<variant>/__init__.py
  std::string etag;  // the blob's name: 40 or 64 lowercase hex
  std::uint64_t size = 0;
};

struct HandoutOptions {
  // Write bits removed (fchmod) from a blob that this process owns before it is checked: the
  // daemon's shared cache is read-only once published (0222); a user's own cache only drops
  // group/other write (0022), which huggingface_hub leaves with umask 002.
  mode_t strip_own_write_bits = 0022;
  // Whether snapshots/<commit>/<path> must link to the blob handed out. The daemon skips it
  // on a warm hand-out of a manifest it checked when it published or first handed it out:
  // only its own user writes its snapshots, and the fds are of the blobs, not the links.
  bool check_snapshot_links = true;
};

// For each file, in order: opens <repo folder>/blobs/<etag> read-only beneath `root_fd`
// (trust::open_beneath: no symlink anywhere below the root, no '..', no other mount), checks
// that snapshots/<commit>/<path> links to that blob (unless told not to), and checks the
// open fd with
// check_blob_fd. Errors: unsafe_path (a symlink where a directory or blob should be, a blob
// that is not a regular file, a snapshot link naming another blob), unsafe_kernel (writable
// by group or others), size_mismatch, entry_not_found (blob or link missing), io.
Result<std::vector<UniqueFd>> open_handout(int root_fd, const trust::RepoId& repo,
                                           std::string_view commit,
                                           const std::vector<HandoutFile>& files,
                                           const HandoutOptions& options = {});

// What a receiver checks on a handed-out fd (also applied by open_handout): a regular file,
// opened read-only, not writable by group or others, of `size` bytes. `what` names the file.
Result<void> check_blob_fd(int fd, std::uint64_t size, std::string_view what);

}  // namespace kernelhub::cache
