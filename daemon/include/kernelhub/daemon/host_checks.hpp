// Start-up and per-connection checks against the host: the cache root must be the daemon's
// own (no symlink, not group/other-writable, exec allowed), the listening socket comes from
// systemd or is bound here, and a peer's identity comes from the kernel only.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <vector>

#include "kernelhub/util/result.hpp"
#include "kernelhub/util/unique_fd.hpp"

namespace kernelhub::daemon {

// Creates the root (0755) if missing; refuses a symlink, a non-directory, group/other write
// permission, or a noexec mount (clients map the handed-out files executable).
Result<UniqueFd> open_cache_root(const std::filesystem::path& root);

// fd 3 when systemd passed exactly one Unix stream socket (and `allow_activation`);
// otherwise binds `path` (parent created 0755, socket 0666: the policy decides who talks).
// `activated` says which.
Result<UniqueFd> open_listener(const std::filesystem::path& path, bool allow_activation,
                               bool& activated);

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary, as the kernel recorded them at connect()
};

Result<PeerCredentials> peer_credentials(int socket_fd);

}  // namespace kernelhub::daemon
