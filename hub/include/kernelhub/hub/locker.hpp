// `kernelhub lock`: resolves a project's kernel dependencies to commits, and every kernel
// that any build variant of a locked commit declares in metadata.json `kernel-depends`,
// transitively, as `kernels lock` does. Each repo passes the trust decision before anything
// is asked of the Hub about it; a dependency cycle is an error naming the path.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "kernelhub/hub/http.hpp"
#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/hub/hub_config.hpp"
#include "kernelhub/trust/kernel_dependency.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub {

// A hostile Hub could declare an endless dependency graph; no real project comes near this.
inline constexpr std::size_t kMaxLockedKernels = 512;

class Locker {
 public:
  Locker(HubConfig config, HttpClient& http, trust::AdminPolicy policy,
         trust::TrustEnvironment trust_env);
  Locker(const Locker&) = delete;  // api_ calls back into this object
  Locker& operator=(const Locker&) = delete;

  // The lock of `dependencies` and their transitive kernel dependencies. The legacy format
  // also gets every build/torch* variant's git_lfs_concat hash (from tree listings; nothing
  // is downloaded but metadata.json).
  Result<trust::Lockfile> lock(const std::vector<trust::KernelDependency>& dependencies,
                               trust::LockFormat format);

 private:
  Result<void> lock_tree(const trust::KernelDependency& dependency,
                         std::vector<trust::KernelDependency>& path);
  Result<std::vector<trust::KernelDependency>> variant_dependencies(const trust::RepoId& repo,
                                                                    const std::string& commit,
                                                                    const std::string& variant);
  Result<std::string> legacy_hash(const trust::RepoId& repo, const std::string& commit,
                                  const std::string& variant);

  HubApi api_;
  trust::AdminPolicy policy_;
  trust::TrustEnvironment trust_env_;
  trust::LockFormat format_ = trust::LockFormat::kernels;
  std::map<trust::KernelDependency, trust::LockEntry> locked_;
};

}  // namespace kernelhub::hub
