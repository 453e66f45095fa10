#include "kernelhub/cache/handout.hpp"
#include "cache_tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <map>

#include "kernelhub/cache/repo_folder.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/open_beneath.hpp"
#include "kernelhub/trust/safe_path.hpp"

namespace kernelhub::cache {
namespace {

// open_beneath's io errors for a name that is not there become entry_not_found.
Result<UniqueFd> open_in_cache(int dir_fd, const std::string& relpath, int flags,
                               std::string_view what) {
  auto fd = open_beneath(dir_fd, relpath, flags);
  if (fd) return fd;
  // Only classifies a failed open; the open itself never followed anything.
  if (fd.error().code == ErrorCode::io &&
      ::faccessat(dir_fd, relpath.c_str(), F_OK, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
    return fail(ErrorCode::entry_not_found, std::string(what) + " is missing from the cache (" +
                                                fd.error().message +
                                                "); fetch it again, or run `kernelhub verify`");
  }
  return fail(fd.error().code, std::string(what) + ": " + fd.error().message);
}

// The blob name a snapshot link points at: the last component of its target.
Result<std::string> link_target_name(int dir_fd, const std::string& name, std::string_view what) {
  std::array<char, 4096> target{};
  const ssize_t n = ::readlinkat(dir_fd, name.c_str(), target.data(), target.size());
  if (n < 0) {
    const int err = errno;
    if (err == ENOENT) {
      return fail(ErrorCode::entry_not_found,
                  "the snapshot link of " + std::string(what) + " is missing; fetch it again");
    }
    if (err == EINVAL) {
      return fail(ErrorCode::unsafe_path,
                  "the snapshot entry of " + std::string(what) + " is not a symlink to a blob");
    }
    return fail(ErrorCode::io, "cannot read the snapshot link of " + std::string(what) + ": " +
                                   std::strerror(err));
  }
  const std::string_view text(target.data(), static_cast<std::size_t>(n));
  const auto slash = text.rfind('/');
  return std::string(slash == std::string_view::npos ? text : text.substr(slash + 1));
}

// What a handed-out blob must be, from its stat: a regular file of the manifest's size that
// neither group nor others can write.
Result<void> check_blob_stat(const struct stat& st, std::uint64_t size, std::string_view what) {
  if (!S_ISREG(st.st_mode))
    return fail(ErrorCode::unsafe_path, std::string(what) + " is not a regular file");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fail(ErrorCode::unsafe_kernel,
                std::string(what) +
                    " is writable by group or others: not handing it out (its owner may "
                    "`chmod go-w` it, or run `kernelhub gc` and fetch again)");
  }
  if (static_cast<std::uint64_t>(st.st_size) != size) {
    return fail(ErrorCode::size_mismatch, std::string(what) + " has " + std::to_string(st.st_size) +
                                              " bytes, the manifest says " + std::to_string(size));
  }
  return ok();
}

}  // namespace

Result<void> check_blob_fd(int fd, std::uint64_t size, std::string_view what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return fail(ErrorCode::io, "fstat " + std::string(what) + ": " + std::strerror(errno));
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) != O_RDONLY)
    return fail(ErrorCode::unsafe_path, std::string(what) + " was not handed out read-only");
  return check_blob_stat(st, size, what);
}

Result<std::vector<UniqueFd>> open_handout(int root_fd, const trust::RepoId& repo,
                                           std::string_view commit,
                                           const std::vector<HandoutFile>& files,
                                           const HandoutOptions& options) {
  if (!trust::is_lower_hex(commit, 40)) {
    return fail(ErrorCode::invalid_argument,
                "'" + trust::sanitize_for_message(commit) + "' is not a commit sha");
  }
  const std::string folder = repo_folder_name(repo);
  KH_TRY_ASSIGN(auto blobs, open_in_cache(root_fd, folder + "/blobs", O_RDONLY | O_DIRECTORY,
                                          "the blobs folder of " + repo.str()));
  const std::string snapshot = folder + "/snapshots/" + std::string(commit);

  // Snapshot subfolder -> fd, opened once, straight from the root (a warm hand-out is a
  // handful of syscalls per file: it is on every fetch's path).
  std::map<std::string, UniqueFd> link_dirs;
  std::vector<UniqueFd> out;
  out.reserve(files.size());
  for (const auto& file : files) {
    KH_TRY_ASSIGN(auto safe, trust::validate_repo_path(file.path));
    if (!tree::is_blob_name(file.etag)) {
      return fail(ErrorCode::unsafe_path, "the blob name of " + safe + " ('" +
                                              trust::sanitize_for_message(file.etag) +
                                              "') is not a sha");
    }
    // The snapshot that users and tools see must name the blob handed out.
    if (options.check_snapshot_links) {
      const auto slash = safe.rfind('/');
      const std::string dir = slash == std::string::npos ? "" : safe.substr(0, slash);
      auto found = link_dirs.find(dir);
      if (found == link_dirs.end()) {
        std::string path = snapshot;
        if (!dir.empty()) path.append("/").append(dir);
        KH_TRY_ASSIGN(auto opened,
                      open_in_cache(root_fd, path, O_RDONLY | O_DIRECTORY,
                                    dir.empty() ? "snapshot " + std::string(commit) : safe));
        found = link_dirs.emplace(dir, std::move(opened)).first;
      }
      KH_TRY_ASSIGN(auto linked,
                    link_target_name(found->second.get(), safe.substr(slash + 1), safe));
      if (linked != file.etag) {
        return fail(ErrorCode::unsafe_path, "the snapshot link of " + safe + " points at " +
                                                trust::sanitize_for_message(linked) +
                                                ", the manifest says " + file.etag);
      }
    }

    // O_NONBLOCK: a FIFO planted as a blob must not block the open. It stays set: for the
    // regular file check_blob_stat insists on it changes no read or mmap, and clearing it
    // would cost a syscall per file on every warm fetch.
    KH_TRY_ASSIGN(auto fd, open_in_cache(blobs.get(), file.etag, O_RDONLY | O_NONBLOCK,
                                         "the blob of " + safe));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
      return fail(ErrorCode::io, "fstat the blob of " + safe + ": " + std::strerror(errno));
    if (S_ISREG(st.st_mode) && (st.st_mode & options.strip_own_write_bits) != 0 &&
        st.st_uid == ::geteuid() &&
        ::fchmod(fd.get(), st.st_mode & 07777 & ~options.strip_own_write_bits) == 0) {
      st.st_mode &= ~options.strip_own_write_bits;
    }
    KH_TRY(check_blob_stat(st, file.size, "the blob of " + safe));
    out.push_back(std::move(fd));
  }
  return out;
}

}  // namespace kernelhub::cache
