#include "import_checks.hpp"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <system_error>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/fs_util.hpp"

namespace kernelhub::cache::bundle {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kBuildPrefix = "build/";

std::string format_size(std::uint64_t bytes) {
  constexpr std::array<const char*, 4> kUnits = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%.1f %s", value, kUnits[unit]);
  return text.data();
}

}  // namespace

Result<void> check_snapshot_unchanged(const KernelCache& cache, const BundledRepo& repo) {
  const fs::path snapshot = cache.snapshot_dir(repo.repo, repo.commit);
  struct stat st {};
  if (::lstat(snapshot.c_str(), &st) != 0) return ok();  // a commit new to the cache
  const auto changed = [&](const std::string& what) {
    return fail(ErrorCode::hash_mismatch,
                "bundle: the cache holds " + repo.repo.str() + "@" + repo.commit + " and " + what +
                    "; a commit's files never change, so this bundle is not of the commit it "
                    "names; nothing was imported");
  };
  for (const auto& file : repo.files) {
    // The manifest parser put every path under build/<variant>/.
    const auto end = file.path.find('/', kBuildPrefix.size());
    const std::string variant = file.path.substr(kBuildPrefix.size(), end - kBuildPrefix.size());
    const fs::path variant_dir = snapshot / "build" / variant;
    if (::lstat(variant_dir.c_str(), &st) != 0) continue;  // a variant new to this commit
    // A variant the cache holds is neither added to nor changed: each file must be there,
    // linked to the same blob.
    std::error_code ec;
    const fs::path link = snapshot / file.path;
    const bool same = fs::is_symlink(fs::symlink_status(link, ec)) &&
                      fs::read_symlink(link, ec).filename() == file.etag && !ec;
    if (!same) {
      return changed("its build/" + variant + " holds " + file.path.substr(end + 1) +
                     (fs::symlink_status(link, ec).type() == fs::file_type::not_found
                          ? " nowhere"
                          : " as other content") +
                     " (the bundle's blob " + file.etag + ")");
    }
  }
  return ok();
}

bool has_intact_blob(const KernelCache& cache, const trust::RepoId& repo, const BundledFile& file) {
  if (!cache.has_blob(repo, file.etag)) return false;
  const fs::path blob = cache.blobs_dir(repo) / file.etag;
  auto digest =
      file.etag.size() == 64 ? trust::sha256_file_hex(blob) : trust::git_blob_sha1_file_hex(blob);
  return digest && *digest == file.etag;
}

Result<void> check_free_space(const KernelCache& cache,
                              const std::vector<std::uint64_t>& new_blob_sizes) {
  // The cache root may not exist yet: its nearest existing folder is on the same file system.
  std::error_code ec;
  fs::path at = fs::absolute(cache.root(), ec);
  if (ec) at = cache.root();
  struct statvfs vfs {};
  while (::statvfs(at.c_str(), &vfs) != 0) {
    if (errno != ENOENT || at == at.parent_path()) {
      return util::errno_error(errno, "bundle: cannot tell the free space of", at);
    }
    at = at.parent_path();
  }
  const std::uint64_t block = vfs.f_frsize != 0 ? vfs.f_frsize : vfs.f_bsize;
  std::uint64_t needed = 0;
  for (const auto size : new_blob_sizes) needed += (size + block - 1) / block * block;
  const std::uint64_t available = static_cast<std::uint64_t>(vfs.f_bavail) * block;
  if (needed <= available) return ok();
  return fail(ErrorCode::disk_full,
              "bundle: the cache " + cache.root().string() + " has " + format_size(available) +
                  " free; the blobs of the bundle it lacks (" +
                  std::to_string(new_blob_sizes.size()) + ") need " + format_size(needed) +
                  "; free space on that file system (`kernelhub gc` removes what no ref uses) "
                  "or import into a cache with room (--cache-dir); nothing was imported");
}

}  // namespace kernelhub::cache::bundle
