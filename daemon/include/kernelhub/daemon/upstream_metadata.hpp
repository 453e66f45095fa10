// The Hub API answers kernelhubd's local Hub passes on: refs, revision -> commit and tree
// listings, fetched upstream once for every client asking at the same time and kept for a
// while (refs and branch revisions for the resolve TTL, listings at a commit longer: a
// commit never changes). The Hub's "no such repo / revision / file" is kept kMissTtl (at most
// the resolve TTL): a client that retries a wrong name costs the upstream nothing meanwhile.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/daemon/coalescing_memo.hpp"
#include "kernelhub/daemon/upstream_http.hpp"
#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/util/environment.hpp"

namespace kernelhub::daemon {

// How long a definite miss is answered from the memo (bounded by the resolve TTL, so
// --resolve-ttl 0 keeps none): short, since a publish may make the name appear.
inline constexpr std::chrono::seconds kMissTtl{5};

class UpstreamMetadata {
 public:
  UpstreamMetadata(const util::Environment& env, std::chrono::seconds resolve_ttl,
                   AtomicCounters& counters);

  Result<hub::RepoRefs> refs(const trust::RepoId& repo);
  // A 40-hex revision is returned as is.
  Result<std::string> commit_of(const trust::RepoId& repo, const std::string& revision);
  Result<std::vector<hub::TreeEntry>> tree(const trust::RepoId& repo, const std::string& commit,
                                           const std::string& path, bool recursive);
  // The entry of the file `path` at `commit` (from its folder's listing); entry_not_found
  // when there is none.
  Result<hub::TreeEntry> file_entry(const trust::RepoId& repo, const std::string& commit,
                                    const std::string& path);
  // A small file's bytes, not kept (the caller checks them against file_entry's oid).
  Result<std::optional<std::string>> small_file(const trust::RepoId& repo,
                                                const std::string& commit, const std::string& path,
                                                std::size_t cap);

 private:
  std::chrono::seconds ttl_;
  UpstreamHttp http_;
  hub::HubApi api_;
  CoalescingMemo<hub::RepoRefs> refs_;
  CoalescingMemo<std::string> commits_;
  CoalescingMemo<std::vector<hub::TreeEntry>> trees_;
};

}  // namespace kernelhub::daemon
