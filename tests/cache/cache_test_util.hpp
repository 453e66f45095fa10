// Shared by the cache tests: publish a set of files the way the fetch pipeline does
// (blobs through BlobWriter, then symlinks, then the ref).
#pragma once

#include <map>
#include <string>

#include "kernelhub/cache/blob_writer.hpp"
#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/trust/digest.hpp"

namespace kernelhub::cache::test {

inline const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

inline std::string etag_of(const std::string& content) { return trust::sha256_hex(content); }

inline Result<void> publish(const KernelCache& cache, const trust::RepoId& repo,
                            const std::string& commit,
                            const std::map<std::string, std::string>& files,
                            const std::string& ref) {
  KH_TRY(cache.prepare_repo(repo));
  std::vector<SnapshotFile> links;
  for (const auto& [path, content] : files) {
    const std::string etag = etag_of(content);
    links.push_back({path, etag});
    if (cache.has_blob(repo, etag)) continue;
    auto w = BlobWriter::create(cache.blobs_dir(repo), {etag, DigestKind::sha256, content.size()});
    KH_TRY(w);
    KH_TRY(w->write(content.data(), content.size()));
    KH_TRY(w->finish());
    KH_TRY(w->commit());
  }
  KH_TRY(cache.link_snapshot(repo, commit, links));
  return cache.write_ref(repo, ref, commit);
}

}  // namespace kernelhub::cache::test
