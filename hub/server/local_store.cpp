// Store I/O: layout documented in docs/local-store.md.
#include "kernelhub/hub/server/local_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/fs_util.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/read_file.hpp"

namespace kernelhub::hub::server {
namespace fs = std::filesystem;
namespace {

// Temps live in <repo>/tmp, one folder to sweep; a ref listing skips any that strayed.
constexpr std::string_view kTempPrefix = ".tmp-";

// Whole small files (commits, refs): written under tmp/, fsynced, renamed into place.
Result<void> write_store_file(const fs::path& tmp_dir, const fs::path& dest,
                              std::string_view content, unsigned mode = 0644) {
  KH_TRY_ASSIGN(auto tmp, util::TempFile::create(tmp_dir, kTempPrefix));
  KH_TRY(tmp.write_all(content.data(), content.size()));
  return tmp.commit(dest, mode);
}

std::string sha1_hex(std::string_view text) {
  trust::Sha1 sha1;
  sha1.update(text);
  return sha1.final_hex();
}

constexpr std::size_t kMaxCommitBytes = std::size_t{64} * 1024 * 1024;

bool is_hex(std::string_view s, std::size_t len) {
  return s.size() == len && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

const char* ref_dir(RefKind kind) { return kind == RefKind::branch ? "refs/heads" : "refs/tags"; }

Result<std::vector<RefEntry>> scan_refs(const fs::path& dir) {
  std::vector<RefEntry> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = fs::relative(it->path(), dir, ec).generic_string();
    if (name.starts_with(kTempPrefix) || !validate_ref_name(name)) continue;
    KH_TRY_ASSIGN(auto text, util::read_small_file(it->path(), 256));
    std::string sha = text.substr(0, text.find_first_of("\r\n"));
    if (!is_hex(sha, 40))
      return fail(ErrorCode::io, "ref file " + it->path().string() + " is corrupt");
    out.push_back({name, sha});
  }
  if (ec) return fail(ErrorCode::io, "cannot list " + dir.string() + ": " + ec.message());
  std::sort(out.begin(), out.end(),
            [](const RefEntry& a, const RefEntry& b) { return a.name < b.name; });
  return out;
}

Result<Commit> parse_commit(std::string_view text, std::string_view id) {
  auto parsed = util::parse_bounded_json(text, util::kStoreJson, ErrorCode::io);
  if (!parsed) {
    return fail(ErrorCode::io,
                "commit " + std::string(id) + " is corrupt: " + parsed.error().message);
  }
  try {
    const auto& j = *parsed;
    Commit c;
    c.id = std::string(id);
    if (!j.at("parent").is_null()) c.parent = j.at("parent").get<std::string>();
    c.message = j.at("message").get<std::string>();
    c.timestamp = j.at("timestamp").get<std::int64_t>();
    for (const auto& [path, f] : j.at("files").items()) {
      c.files[path] =
          StoredFile{f.at("size").get<std::uint64_t>(), f.at("sha256").get<std::string>(),
                     f.at("git_oid").get<std::string>(), f.at("lfs").get<bool>()};
    }
    return c;
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorCode::io, "commit " + std::string(id) + " is corrupt: " + e.what());
  }
}

}  // namespace

fs::path LocalStore::repo_dir(const trust::RepoId& repo) const {
  return root_ / repo.org / repo.name;
}

bool LocalStore::has_repo(const trust::RepoId& repo) const {
  std::error_code ec;
  return fs::is_directory(repo_dir(repo) / "commits", ec);
}

Result<RefList> LocalStore::list_refs(const trust::RepoId& repo) const {
  if (!has_repo(repo))
    return fail(ErrorCode::repo_not_found, "repository " + repo.str() + " not found");
  KH_TRY_ASSIGN(auto branches, scan_refs(repo_dir(repo) / "refs/heads"));
  KH_TRY_ASSIGN(auto tags, scan_refs(repo_dir(repo) / "refs/tags"));
  return RefList{std::move(branches), std::move(tags)};
}

Result<std::optional<std::string>> LocalStore::read_ref(const trust::RepoId& repo, RefKind kind,
                                                        std::string_view name) const {
  KH_TRY(validate_ref_name(name));
  const fs::path file = repo_dir(repo) / ref_dir(kind) / std::string(name);
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::optional<std::string>{};
  KH_TRY_ASSIGN(auto text, util::read_small_file(file, 256));
  std::string sha = text.substr(0, text.find_first_of("\r\n"));
  if (!is_hex(sha, 40)) return fail(ErrorCode::io, "ref file " + file.string() + " is corrupt");
  return std::optional<std::string>(std::move(sha));
}

Result<std::string> LocalStore::resolve(const trust::RepoId& repo,
                                        std::string_view revision) const {
  if (!has_repo(repo))
    return fail(ErrorCode::repo_not_found, "repository " + repo.str() + " not found");
  const auto not_found = [&] {
    return fail(ErrorCode::revision_not_found,
                "revision '" + std::string(revision) + "' not found in " + repo.str());
  };
  std::error_code ec;
  if (is_hex(revision, 40)) {
    if (fs::is_regular_file(repo_dir(repo) / "commits" / (std::string(revision) + ".json"), ec)) {
      return std::string(revision);
    }
    return not_found();
  }
  std::vector<std::pair<RefKind, std::string_view>> candidates;
  if (revision.starts_with("refs/heads/")) {
    candidates.emplace_back(RefKind::branch, revision.substr(11));
  } else if (revision.starts_with("refs/tags/")) {
    candidates.emplace_back(RefKind::tag, revision.substr(10));
  } else {
    candidates = {{RefKind::branch, revision}, {RefKind::tag, revision}};
  }
  for (const auto& [kind, name] : candidates) {
    if (!validate_ref_name(name)) return not_found();
    KH_TRY_ASSIGN(auto sha, read_ref(repo, kind, name));
    if (sha) return *sha;
  }
  return not_found();
}

Result<Commit> LocalStore::read_commit(const trust::RepoId& repo, std::string_view id) const {
  if (!is_hex(id, 40))
    return fail(ErrorCode::revision_not_found, "not a commit id: " + std::string(id));
  auto text = util::read_small_file(repo_dir(repo) / "commits" / (std::string(id) + ".json"),
                                    kMaxCommitBytes);
  if (!text) return fail(ErrorCode::revision_not_found, text.error().message);
  if (sha1_hex(*text) != id)
    return fail(ErrorCode::io, "commit " + std::string(id) + " does not match its id");
  return parse_commit(*text, id);
}

fs::path LocalStore::object_path(const trust::RepoId& repo, std::string_view sha256) const {
  return repo_dir(repo) / "objects" / std::string(sha256.substr(0, 2)) /
         std::string(sha256.substr(2));
}

Result<void> LocalStore::create_repo(const trust::RepoId& repo) const {
  const fs::path dir = repo_dir(repo);
  for (const char* sub : {"objects", "refs/heads", "refs/tags", "tmp", "commits"})
    KH_TRY(util::make_dirs(dir / sub));
  return ok();
}

Result<StoredFile> LocalStore::add_object(const trust::RepoId& repo, const fs::path& source,
                                          std::string_view repo_path) const {
  UniqueFd in(::open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st {};
  if (!in || ::fstat(in.get(), &st) != 0) {
    return fail(ErrorCode::io, "cannot open " + source.string() + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    return fail(ErrorCode::unsafe_path, source.string() + " is not a regular file");
  KH_TRY_ASSIGN(auto tmp, util::TempFile::create(repo_dir(repo) / "tmp", kTempPrefix));
  trust::Sha256 sha256;
  trust::GitBlobSha1 git_oid(static_cast<std::uint64_t>(st.st_size));
  std::vector<char> buf(1 << 20);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(in.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return fail(ErrorCode::io, "cannot read " + source.string() + ": " + std::strerror(errno));
    if (n == 0) break;
    sha256.update(buf.data(), static_cast<std::size_t>(n));
    git_oid.update(buf.data(), static_cast<std::size_t>(n));
    KH_TRY(tmp.write_all(buf.data(), static_cast<std::size_t>(n)));
    total += static_cast<std::uint64_t>(n);
  }
  if (total != static_cast<std::uint64_t>(st.st_size)) {
    return fail(ErrorCode::io, source.string() + " changed size while it was read");
  }
  StoredFile file{total, sha256.final_hex(), git_oid.final_hex(), is_lfs_file(repo_path, total)};
  const fs::path dest = object_path(repo, file.sha256);
  std::error_code ec;
  if (!fs::exists(dest, ec)) {  // same content already stored: the temp is dropped
    KH_TRY(util::make_dirs(dest.parent_path()));
    KH_TRY(tmp.commit(dest, 0444));
  }
  return file;
}

Result<std::string> LocalStore::write_commit(const trust::RepoId& repo, Commit commit) const {
  if (commit.parent) {
    std::error_code ec;
    if (!fs::is_regular_file(repo_dir(repo) / "commits" / (*commit.parent + ".json"), ec)) {
      return fail(ErrorCode::invalid_argument,
                  "parent commit " + *commit.parent + " does not exist");
    }
  }
  KH_TRY_ASSIGN(auto text, canonical_commit_json(commit));
  const std::string id = sha1_hex(text);
  KH_TRY(write_store_file(repo_dir(repo) / "tmp", repo_dir(repo) / "commits" / (id + ".json"), text,
                          0444));
  return id;
}

Result<void> LocalStore::set_ref(const trust::RepoId& repo, RefKind kind, std::string_view name,
                                 std::string_view commit) const {
  KH_TRY(validate_ref_name(name));
  if (!is_hex(commit, 40))
    return fail(ErrorCode::invalid_argument, "not a commit id: " + std::string(commit));
  const fs::path file = repo_dir(repo) / ref_dir(kind) / std::string(name);
  KH_TRY(util::make_dirs(file.parent_path()));
  return write_store_file(repo_dir(repo) / "tmp", file, std::string(commit) + "\n");
}

Result<RepoLock> RepoLock::acquire(const LocalStore& store, const trust::RepoId& repo) {
  KH_TRY(util::make_dirs(store.repo_dir(repo)));
  KH_TRY_ASSIGN(auto lock, util::FileLock::acquire(store.repo_dir(repo) / ".lock"));
  return RepoLock(std::move(lock));
}

}  // namespace kernelhub::hub::server
