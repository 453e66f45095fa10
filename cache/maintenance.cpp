// verify_cache and collect_garbage (over evict). Every open is relative to a directory fd with
// O_NOFOLLOW, so a symlink planted in the cache is never followed out of it.
#include "kernelhub/cache/maintenance.hpp"
#include "cache_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <set>

#include "kernelhub/cache/cache_usage.hpp"
#include "kernelhub/cache/repo_folder.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/read_file.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::cache {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> dir_entries(int dir_fd) {
  std::vector<std::string> names;
  const int dup_fd = ::dup(dir_fd);
  if (dup_fd < 0) return names;
  DIR* dir = ::fdopendir(dup_fd);
  if (dir == nullptr) {
    ::close(dup_fd);
    return names;
  }
  ::rewinddir(dir);
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(dir);
  return names;
}

UniqueFd open_dir_at(int parent, const char* name) {
  return UniqueFd(::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// Hex digest of an open blob in the scheme its name implies.
Result<std::string> hash_blob(int fd, std::string_view name, std::uint64_t size) {
  const bool sha256 = name.size() == 64;
  trust::Sha256 sha;
  trust::GitBlobSha1 git(size);
  std::array<char, 1 << 16> buffer{};
  off_t offset = 0;
  for (;;) {
    const ssize_t n = ::pread(fd, buffer.data(), buffer.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return fail(ErrorCode::io,
                  "cannot read blob " + std::string(name) + ": " + std::strerror(errno));
    if (n == 0) break;
    sha256 ? sha.update(buffer.data(), static_cast<std::size_t>(n))
           : git.update(buffer.data(), static_cast<std::size_t>(n));
    offset += n;
  }
  return sha256 ? sha.final_hex() : git.final_hex();
}

// nullopt: the blob is fine; otherwise why it is not.
std::optional<std::string> check_blob(int blobs_fd, const std::string& name) {
  UniqueFd fd(::openat(blobs_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::string("cannot open: ") + std::strerror(errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::string("not a regular file");
  auto digest = hash_blob(fd.get(), name, static_cast<std::uint64_t>(st.st_size));
  if (!digest) return digest.error().message;
  if (*digest != name) return (name.size() == 64 ? "sha256 is " : "git blob sha1 is ") + *digest;
  return std::nullopt;
}

}  // namespace

Result<VerifyReport> verify_cache(const KernelCache& cache, std::optional<trust::RepoId> only) {
  VerifyReport report;
  UniqueFd root = open_dir_at(AT_FDCWD, cache.root().c_str());
  if (!root) {
    if (errno == ENOENT) return report;  // nothing cached yet
    return util::errno_error(errno, "cannot open cache root", cache.root());
  }
  std::vector<trust::RepoId> repos =
      only ? std::vector<trust::RepoId>{*only} : cached_repo_ids(cache);
  for (const auto& repo : repos) {
    const std::string folder = cache.repo_dir(repo).filename().string();
    UniqueFd repo_fd = open_dir_at(root.get(), folder.c_str());
    if (!repo_fd) continue;
    UniqueFd blobs = open_dir_at(repo_fd.get(), "blobs");
    if (!blobs) continue;
    for (const auto& name : dir_entries(blobs.get())) {
      if (!tree::is_blob_name(name)) continue;  // temps and foreign files are not ours to judge
      ++report.checked;
      if (auto reason = check_blob(blobs.get(), name)) {
        ::unlinkat(blobs.get(), name.c_str(), 0);
        report.corrupt.push_back({repo.str(), name, std::move(*reason)});
      }
    }
  }
  return report;
}

Result<GcReport> collect_garbage(const KernelCache& cache, EvictionOptions options) {
  options.remove_unreferenced = true;
  return evict(cache, options);
}

}  // namespace kernelhub::cache
