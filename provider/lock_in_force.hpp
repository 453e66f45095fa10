// The lockfile in force (set_lockfile_override's, else KERNELHUB_LOCKFILE), parsed once per
// path, and what it pins for a hub kernel.
#pragma once

#include <optional>
#include <string>

#include "kernelhub/provider/kernel_provider.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::provider {

// The entry that pins `repo`, or nullopt when no lockfile is in force. A repo the lock does
// not name, or locks at another version or revision than the spec's, is not_locked; errors
// start with `context` and say how to relock.
Result<std::optional<trust::LockEntry>> locked_entry(const HubKernelSpec& spec,
                                                     const trust::RepoId& repo,
                                                     const std::string& context);

// The entry of the lockfile at `path` (kernels' LockedLayerRepository with a lockfile): read
// each time, not_locked when it does not pin `repo`.
Result<trust::LockEntry> locked_entry_in(const std::string& path, const HubKernelSpec& spec,
                                         const trust::RepoId& repo, const std::string& context);

// KERNELHUB_LOCKFILE may name another file now: parse it again on next use.
void forget_parsed_lockfile();

}  // namespace kernelhub::provider
