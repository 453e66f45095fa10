// `import` requests: a bundle published into kernelhubd's shared cache. Only peers the admin
// policy names may ask (connection.cpp checks); here the descriptor is checked to be a
// regular file (a pipe could stall a worker forever), the client's trust variables are
// bounded by the policy as for a fetch, [signatures] is applied as to a download, and the
// import runs beside downloads (never beside verify or gc). Warm memos are dropped after, so
// the next fetch sees the new commits.
#include <sys/stat.h>

#include <spdlog/spdlog.h>

#include "kernelhub/cache/bundle/bundle_import.hpp"
#include "kernelhub/daemon/fetch_service.hpp"
#include "kernelhub/hub/import_signatures.hpp"
#include "kernelhub/util/read_file.hpp"

namespace kernelhub::daemon {

Result<nlohmann::json> FetchService::import_bundle(int fd,
                                                   const std::map<std::string, std::string>& env) {
  if (auto regular = util::require_regular_fd(fd, "the bundle"); !regular) {
    return fail(ErrorCode::invalid_request,
                "import needs the bundle as an open regular file: " + regular.error().message);
  }
  cache::bundle::ImportOptions options;
  options.policy = *policy();
  options.trust_env = client_trust(env);
  KH_TRY_ASSIGN(options.signature_check, hub::import_signature_check(options.policy.signatures));

  std::shared_lock maintenance(maintenance_);
  cache::KernelCache cache(root_);
  cache.set_published_blob_mode(0444);  // the shared cache: read-only from the moment it is visible
  KH_TRY_ASSIGN(auto imported, cache::bundle::import_bundle(fd, cache, options));
  memo_.forget_all();
  for (const auto& repo : imported) {
    spdlog::info("imported {}@{} from a bundle ({} files)", repo.repo.str(), repo.commit,
                 repo.files);
    for (const auto& warning : repo.signature_warnings) spdlog::warn("{}", warning);
  }
  return cache::bundle::imported_json(imported, cache);
}

}  // namespace kernelhub::daemon
