// open_local_kernel: a kernel build on the local disk (LOCAL_KERNELS, a library backend's
// install), opened beneath its folder without following symlinks.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/trust/open_beneath.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/variant/variant.hpp"
#include "kernelhub/variant/variant_name.hpp"
#include "metadata_file.hpp"

namespace kernelhub::loader {
namespace {

constexpr std::size_t kMaxFiles = 4096;
constexpr int kMaxDepth = 8;

struct DirEntry {
  std::string name;
  unsigned char type;  // DT_* from readdir; DT_UNKNOWN is resolved with fstatat
};

// Entries of an open directory (its fd is duplicated, so `dir_fd` stays usable).
Result<std::vector<DirEntry>> list_dir(int dir_fd, const std::string& what) {
  const int fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* dir = fd < 0 ? nullptr : ::fdopendir(fd);
  if (dir == nullptr) {
    if (fd >= 0) ::close(fd);
    return fail(ErrorCode::io, "cannot list " + what + ": " + std::strerror(errno));
  }
  std::unique_ptr<DIR, int (*)(DIR*)> guard(dir, ::closedir);
  std::vector<DirEntry> entries;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    unsigned char type = entry->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st {};
      if (::fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode)   ? DT_DIR
             : S_ISLNK(st.st_mode) ? DT_LNK
             : S_ISREG(st.st_mode) ? DT_REG
                                   : DT_UNKNOWN;
    }
    entries.push_back({std::string(name), type});
  }
  std::sort(entries.begin(), entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return entries;
}

// Every regular file beneath `dir_fd` as a variant-relative path; a symlink is refused
// (it could point anywhere), __pycache__ and *.pyc are skipped as the digest skips them.
Result<void> collect_files(int dir_fd, const std::string& prefix, int depth,
                           std::vector<std::string>& out) {
  KH_TRY_ASSIGN(auto entries, list_dir(dir_fd, prefix.empty() ? "the variant folder" : prefix));
  for (const auto& entry : entries) {
    const std::string path = prefix + entry.name;
    if (trust::excluded_from_digest(path) && entry.name != "metadata.json") continue;
    if (entry.type == DT_LNK) {
      return fail(ErrorCode::unsafe_path,
                  "kernel file " + trust::sanitize_for_message(path) + " is a symlink");
    }
    if (entry.type == DT_DIR) {
      if (depth == kMaxDepth)
        return fail(ErrorCode::unsafe_path, "kernel folder is nested too deeply");
      KH_TRY_ASSIGN(auto sub, open_beneath(dir_fd, entry.name, O_RDONLY | O_DIRECTORY));
      KH_TRY(collect_files(sub.get(), path + "/", depth + 1, out));
    } else {
      if (out.size() == kMaxFiles)
        return fail(ErrorCode::too_large, "kernel folder has too many files");
      out.push_back(path);
    }
  }
  return ok();
}

bool has_entry(const std::vector<DirEntry>& entries, auto&& predicate) {
  return std::any_of(entries.begin(), entries.end(), predicate);
}

variant::Platform platform_of(const Runtime& runtime) {
  variant::Platform platform;
  platform.torch_major = runtime.torch_major;
  platform.torch_minor = runtime.torch_minor;
  platform.cxx11_abi = runtime.cxx11_abi;
  platform.arch = runtime.arch;
  platform.os = runtime.os;
  if (runtime.cuda) {
    std::string digits = *runtime.cuda;
    std::erase(digits, '.');
    platform.backend = "cu" + digits;
  }
  return platform;
}

// The variant under build/ this runtime prefers: kernels' ranking, then the loader's own
// check (which also accepts cpu builds on a CUDA machine and refuses Python-only ones unless
// the caller can import them).
Result<std::string> pick_variant(int build_fd, const Runtime& runtime, VariantKinds kinds) {
  KH_TRY_ASSIGN(auto entries, list_dir(build_fd, "build/"));
  std::vector<std::string> names;
  for (const auto& entry : entries) {
    if (entry.type == DT_DIR) names.push_back(entry.name);
  }
  std::string reasons;
  for (const auto& candidate : variant::rank_variants(names, platform_of(runtime))) {
    const auto parsed = variant::parse_variant_name(candidate.name);
    const bool python = kinds == VariantKinds::compiled_or_python && parsed &&
                        parsed->framework == variant::Framework::noarch;
    const auto check = python ? check_noarch_compatible(candidate.name, runtime)
                              : check_variant_compatible(candidate.name, runtime);
    if (check) return candidate.name;
    reasons += "\n  " + check.error().message;
  }
  return fail(ErrorCode::no_matching_variant,
              "no build variant under build/ can be loaded here" +
                  (names.empty() ? std::string(" (build/ is empty)") : ":" + reasons));
}

}  // namespace

Result<KernelSource> open_local_kernel(const std::filesystem::path& dir, std::string_view repo,
                                       const Runtime& runtime, VariantKinds kinds) {
  KernelSource source;
  source.repo = std::string(repo);
  UniqueFd root(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root)
    return fail(ErrorCode::io, "cannot open " + dir.string() + ": " + std::strerror(errno));

  KH_TRY_ASSIGN(auto top, list_dir(root.get(), dir.string()));
  const bool is_variant = has_entry(top, [](const DirEntry& e) {
    return e.name == "metadata.json" || (e.type == DT_REG && e.name.ends_with(".so"));
  });
  UniqueFd variant_fd;
  if (is_variant) {
    auto normal = std::filesystem::absolute(dir).lexically_normal();
    if (!normal.has_filename()) normal = normal.parent_path();  // "dir/" has no filename
    source.variant = normal.filename().string();
    variant_fd = std::move(root);
  } else {
    auto build = open_beneath(root.get(), "build", O_RDONLY | O_DIRECTORY);
    if (!build) {
      return fail(ErrorCode::entry_not_found,
                  dir.string() +
                      " is neither a kernel variant folder (metadata.json or a .so) "
                      "nor a kernel with build/<variant>/ folders");
    }
    KH_TRY_ASSIGN(source.variant, pick_variant(build->get(), runtime, kinds));
    KH_TRY_ASSIGN(variant_fd, open_beneath(build->get(), source.variant, O_RDONLY | O_DIRECTORY));
  }

  std::vector<std::string> paths;
  KH_TRY(collect_files(variant_fd.get(), "", 0, paths));
  std::optional<std::map<std::string, std::string>> expected;
  for (const auto& path : paths) {
    KH_TRY_ASSIGN(auto fd, open_beneath(variant_fd.get(), path));
    if (path == "metadata.json") {
      KH_TRY_ASSIGN(auto metadata, detail::read_metadata_fd(fd.get(), "metadata.json"));
      if (metadata.has_digest()) {
        KH_TRY_ASSIGN(expected, trust::digest_sha256_hex(metadata));
      }
    }
    source.files.push_back(KernelFile{path, {}, std::move(fd)});
  }

  // Expected digests: metadata.json's when it has them (every covered file must be listed,
  // and every listed file present), else the bytes as they are.
  for (auto& file : source.files) {
    if (expected && !trust::excluded_from_digest(file.path)) {
      const auto it = expected->find(file.path);
      if (it == expected->end()) {
        return fail(ErrorCode::hash_mismatch,
                    source.repo + ": " + file.path + " is not listed in metadata.json's digest");
      }
      file.sha256 = it->second;
      expected->erase(it);
      continue;
    }
    KH_TRY_ASSIGN(file.sha256, trust::sha256_fd_hex(file.fd.get()));
  }
  if (expected && !expected->empty()) {
    return fail(ErrorCode::entry_not_found, source.repo + ": " + expected->begin()->first +
                                                " is listed in metadata.json but missing");
  }
  return source;
}

}  // namespace kernelhub::loader
