// Embedded mode: the fetch pipeline and cache maintenance run in this process against the
// user's own cache, with the user's environment and admin policy file.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/client/client.hpp"
#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/util/environment.hpp"

namespace kernelhub::client {

class EmbeddedBackend {
 public:
  EmbeddedBackend(const util::Environment& env, const ClientOptions& options);

  const cache::KernelCache& cache() const { return cache_; }
  Result<FetchedKernel> fetch(const fetch::Request& request, const hub::ProgressCallback& progress,
                              bool hand_out);
  Result<nlohmann::json> status() const;
  Result<nlohmann::json> ls() const;
  Result<nlohmann::json> verify(const std::optional<trust::RepoId>& repo) const;
  Result<nlohmann::json> gc(const GcOptions& options) const;
  Result<nlohmann::json> pin(const PinOptions& options) const;
  Result<nlohmann::json> unpin(const trust::RepoId& repo,
                               const std::optional<std::string>& revision) const;
  Result<nlohmann::json> pins() const;
  Result<nlohmann::json> import_bundle(int fd) const;

 private:
  // The admin policy file (options.policy_file, else $KERNELHUB_POLICY) is read at each
  // fetch, so ls/verify/gc never depend on it and an edit applies to the next fetch.
  Result<trust::AdminPolicy> load_policy() const;

  util::Environment env_;
  cache::KernelCache cache_;
  std::optional<std::filesystem::path> policy_file_;
};

}  // namespace kernelhub::client
