#include "kernelhub/daemon/upstream_metadata.hpp"

namespace kernelhub::daemon {
namespace {

// Listings at a commit never change; keep them this long (bounded by entry count).
constexpr std::chrono::hours kCommitListingTtl{24};

}  // namespace

UpstreamMetadata::UpstreamMetadata(const util::Environment& env, std::chrono::seconds resolve_ttl,
                                   AtomicCounters& counters)
    : ttl_(resolve_ttl),
      http_(hub::HubConfig::from(env), counters),
      api_(hub::HubConfig::from(env), http_),
      refs_(1024, std::min<std::chrono::seconds>(kMissTtl, resolve_ttl)),
      commits_(4096, std::min<std::chrono::seconds>(kMissTtl, resolve_ttl)),
      trees_(512, std::min<std::chrono::seconds>(kMissTtl, resolve_ttl)) {}

Result<hub::RepoRefs> UpstreamMetadata::refs(const trust::RepoId& repo) {
  return refs_.get(repo.str(), ttl_, [&] { return api_.list_refs(repo); });
}

Result<std::string> UpstreamMetadata::commit_of(const trust::RepoId& repo,
                                                const std::string& revision) {
  if (hub::is_commit_sha(revision)) return revision;
  return commits_.get(repo.str() + '\n' + revision, ttl_,
                      [&] { return api_.resolve_revision(repo, revision); });
}

Result<std::vector<hub::TreeEntry>> UpstreamMetadata::tree(const trust::RepoId& repo,
                                                           const std::string& commit,
                                                           const std::string& path,
                                                           bool recursive) {
  const std::string key =
      repo.str() + '\n' + commit + '\n' + path + (recursive ? "\nrecursive" : "\nflat");
  return trees_.get(key, kCommitListingTtl,
                    [&] { return api_.list_tree(repo, commit, path, recursive); });
}

Result<hub::TreeEntry> UpstreamMetadata::file_entry(const trust::RepoId& repo,
                                                    const std::string& commit,
                                                    const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash);
  auto listing = tree(repo, commit, folder, false);
  if (!listing) {
    // A missing folder is a missing file.
    if (listing.error().code == ErrorCode::entry_not_found) {
      return fail(ErrorCode::entry_not_found,
                  path + " does not exist in " + repo.str() + "@" + commit);
    }
    return fail(listing.error());
  }
  for (const auto& entry : *listing) {
    if (entry.is_file && entry.path == path) return entry;
  }
  return fail(ErrorCode::entry_not_found, path + " does not exist in " + repo.str() + "@" + commit);
}

Result<std::optional<std::string>> UpstreamMetadata::small_file(const trust::RepoId& repo,
                                                                const std::string& commit,
                                                                const std::string& path,
                                                                std::size_t cap) {
  return api_.read_optional_file(repo, commit, path, cap);
}

}  // namespace kernelhub::daemon
