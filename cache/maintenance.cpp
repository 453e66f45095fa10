// verify_cache and collect_garbage. Every open is relative to a directory fd with
// O_NOFOLLOW, so a symlink planted in the cache is never followed out of it.
#include "kernelhub/cache/maintenance.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <set>

#include "kernelhub/cache/repo_folder.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/read_file.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::cache {

namespace fs = std::filesystem;

namespace {

bool is_blob_name(std::string_view name) {
  return trust::is_lower_hex(name, 64) || trust::is_lower_hex(name, 40);
}

// The repos to visit: kernels--* folders that are real directories (not symlinks).
std::vector<trust::RepoId> cached_repos(const fs::path& root) {
  std::vector<trust::RepoId> out;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    auto id = parse_repo_folder_name(it->path().filename().string());
    if (id && it->is_directory(ec) && !it->is_symlink(ec)) out.push_back(*id);
  }
  return out;
}

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

// Commits that some file under refs/ (nested refs like refs/pr/1 included) points to.
std::set<std::string> referenced_commits(const fs::path& refs_dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(refs_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    auto read = util::read_small_file(it->path(), 63);
    std::string text = read ? read->substr(0, read->find('\n')) : std::string();
    while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.pop_back();
    if (trust::is_lower_hex(text, 40)) out.insert(text);
  }
  return out;
}

// Blob names that symlinks under snapshots/ point at (…/blobs/<name>). Directory symlinks
// are not descended into.
std::set<std::string> linked_blobs(const fs::path& snapshots_dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(snapshots_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_symlink(ec)) continue;
    const fs::path target = fs::read_symlink(it->path(), ec);
    if (!ec && target.parent_path().filename() == "blobs") out.insert(target.filename().string());
    ec.clear();
  }
  return out;
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
      only ? std::vector<trust::RepoId>{*only} : cached_repos(cache.root());
  for (const auto& repo : repos) {
    const std::string folder = cache.repo_dir(repo).filename().string();
    UniqueFd repo_fd = open_dir_at(root.get(), folder.c_str());
    if (!repo_fd) continue;
    UniqueFd blobs = open_dir_at(repo_fd.get(), "blobs");
    if (!blobs) continue;
    for (const auto& name : dir_entries(blobs.get())) {
      if (!is_blob_name(name)) continue;  // temps and foreign files are not ours to judge
      ++report.checked;
      if (auto reason = check_blob(blobs.get(), name)) {
        ::unlinkat(blobs.get(), name.c_str(), 0);
        report.corrupt.push_back({repo.str(), name, std::move(*reason)});
      }
    }
  }
  return report;
}

Result<GcReport> collect_garbage(const KernelCache& cache) {
  GcReport report;
  std::error_code ec;
  if (!fs::exists(cache.root(), ec)) return report;
  for (const auto& repo : cached_repos(cache.root())) {
    const fs::path dir = cache.repo_dir(repo);
    const auto keep = referenced_commits(dir / "refs");
    for (fs::directory_iterator it(dir / "snapshots", ec), end; !ec && it != end;
         it.increment(ec)) {
      if (keep.contains(it->path().filename().string())) continue;
      std::error_code rec;
      fs::remove_all(it->path(), rec);  // removes symlinks themselves, never their targets
      // The snapshot's signature receipts go with it (a later download verifies anew).
      if (!rec)
        fs::remove_all(cache.signature_receipts_dir(repo, it->path().filename().string()), rec);
      if (rec)
        return fail(ErrorCode::io, "cannot remove " + it->path().string() + ": " + rec.message());
      ++report.removed_snapshots;
    }
    ec.clear();
    const auto linked = linked_blobs(dir / "snapshots");
    UniqueFd blobs = open_dir_at(AT_FDCWD, (dir / "blobs").c_str());
    if (!blobs) continue;
    for (const auto& name : dir_entries(blobs.get())) {
      if (!is_blob_name(name) || linked.contains(name)) continue;
      struct stat st {};
      if (::fstatat(blobs.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (::unlinkat(blobs.get(), name.c_str(), 0) != 0)
        return util::errno_error(errno, "cannot remove blob", dir / "blobs" / name);
      ++report.removed_blobs;
      if (S_ISREG(st.st_mode)) report.freed_bytes += static_cast<std::uint64_t>(st.st_size);
    }
  }
  return report;
}

}  // namespace kernelhub::cache
