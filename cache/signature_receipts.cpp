// Signature receipts: what the verifier concluded about one variant of one commit
// (kernelhub/hub/signature_gate.hpp writes and reads the content). A receipt only saves
// re-verifying; it is trusted only where no one but the cache's owner can have written it, so a
// receipt in a folder or file that another user can write, or owned by someone else, is ignored
// (the variant is verified again from its cached bundle).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::cache {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxReceiptBytes = 64u << 10;

bool owned_and_private(const struct stat& st) {
  return st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

}  // namespace

fs::path KernelCache::signature_receipts_dir(const trust::RepoId& repo,
                                             std::string_view commit) const {
  return state_dir(repo) / "signatures" / std::string(commit);
}

fs::path KernelCache::signature_receipt_path(const trust::RepoId& repo, std::string_view commit,
                                             std::string_view variant) const {
  return signature_receipts_dir(repo, commit) / (std::string(variant) + ".json");
}

std::optional<std::string> KernelCache::read_signature_receipt(const trust::RepoId& repo,
                                                               std::string_view commit,
                                                               std::string_view variant) const {
  const fs::path dir = signature_receipts_dir(repo, commit);
  for (const fs::path& folder : {dir.parent_path().parent_path(), dir.parent_path(), dir}) {
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !owned_and_private(st)) {
      return std::nullopt;
    }
  }
  const fs::path path = signature_receipt_path(repo, commit, variant);
  // O_NONBLOCK: a FIFO in its place opens without waiting, and fstat refuses it.
  const UniqueFd fd(
      ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !owned_and_private(st) ||
      st.st_size <= 0 || static_cast<std::size_t>(st.st_size) > kMaxReceiptBytes) {
    return std::nullopt;
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n <= 0) return std::nullopt;
    done += static_cast<std::size_t>(n);
  }
  return text;
}

Result<void> KernelCache::write_signature_receipt(const trust::RepoId& repo,
                                                  std::string_view commit, std::string_view variant,
                                                  std::string_view content) const {
  const fs::path dir = signature_receipts_dir(repo, commit);
  util::DirtyDirs dirty;
  KH_TRY(dirty.create(dir));
  // Private to the owner whatever the umask: a readable-by-all receipt is fine, a writable
  // one would be ignored by read_signature_receipt.
  for (const fs::path& folder : {dir.parent_path().parent_path(), dir.parent_path(), dir}) {
    struct stat st {};
    if (::lstat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid()) {
      ::chmod(folder.c_str(), st.st_mode & ~(S_IWGRP | S_IWOTH) & 07777);
    }
  }
  KH_TRY(util::write_file_atomic(signature_receipt_path(repo, commit, variant), content, 0644));
  return dirty.sync();
}

}  // namespace kernelhub::cache
