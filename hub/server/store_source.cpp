#include "store_source.hpp"

#include <filesystem>

namespace kernelhub::hub::server {
namespace {

// A store entry as Hub listings show it: an LFS file's oid is its pointer's blob id.
TreeEntry listed(const StoreEntry& entry) {
  TreeEntry out;
  out.path = entry.path;
  if (!entry.file) {
    out.oid = entry.directory_oid;
    return out;
  }
  const StoredFile& f = *entry.file;
  out.is_file = true;
  out.size = f.size;
  out.oid = f.lfs ? lfs_pointer_oid(f) : f.git_oid;
  if (f.lfs) out.lfs_sha256 = f.sha256;
  return out;
}

std::vector<GitRef> listed(const std::vector<RefEntry>& refs, const std::string& prefix) {
  std::vector<GitRef> out;
  out.reserve(refs.size());
  for (const auto& r : refs) out.push_back({r.name, prefix + r.name, r.commit});
  return out;
}

}  // namespace

Result<bool> StoreSource::trusted_publisher(const std::string& org) {
  // An org exists when the store holds a folder for it; trust comes from the options.
  if (!std::filesystem::is_directory(ctx_.store.root() / org))
    return fail(ErrorCode::repo_not_found, "organization '" + org + "' does not exist");
  return ctx_.options.trusted_publishers.count(org) > 0;
}

Result<RepoRefs> StoreSource::refs(const trust::RepoId& repo) {
  KH_TRY_ASSIGN(auto refs, ctx_.store.list_refs(repo));
  return RepoRefs{listed(refs.branches, "refs/heads/"), listed(refs.tags, "refs/tags/")};
}

Result<std::vector<TreeEntry>> StoreSource::tree(const trust::RepoId& repo,
                                                 const std::string& commit, const std::string& path,
                                                 bool recursive) {
  KH_TRY_ASSIGN(auto stored, ctx_.store.read_commit(repo, commit));
  KH_TRY_ASSIGN(auto entries, list_tree(stored, path, recursive));
  std::vector<TreeEntry> out;
  out.reserve(entries.size());
  for (const auto& entry : entries) out.push_back(listed(entry));
  return out;
}

Result<std::optional<TreeEntry>> StoreSource::find(const trust::RepoId& repo,
                                                   const std::string& commit,
                                                   const std::string& path) {
  KH_TRY_ASSIGN(auto stored, ctx_.store.read_commit(repo, commit));
  auto entry = find_entry(stored, path);
  if (!entry) return std::optional<TreeEntry>{};
  return std::optional<TreeEntry>{listed(*entry)};
}

Result<std::optional<CommitSummary>> StoreSource::commit(const trust::RepoId& repo,
                                                         const std::string& commit) {
  KH_TRY_ASSIGN(auto stored, ctx_.store.read_commit(repo, commit));
  return std::optional<CommitSummary>{
      CommitSummary{stored.id, stored.message, stored.timestamp, stored.parent}};
}

void StoreSource::serve_file(const httplib::Request& req, httplib::Response& res,
                             const RepoTarget& target, const Located& where) {
  serve_store_file(ctx_, req, res, target, where);
}

}  // namespace kernelhub::hub::server
