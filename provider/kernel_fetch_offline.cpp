// The offline build (KERNELHUB_WITH_HUB=OFF) has no Hub client: a hub kernel comes from
// LOCAL_KERNELS or not at all.
#include "kernel_fetch.hpp"

namespace kernelhub::provider {

Result<ProvidedKernel> fetch_hub_source(const fetch::Request& /*request*/,
                                        const HubKernelSpec& spec, const std::string& context) {
  // offline_not_cached: nothing local, and no way to reach the Hub (not a refusal).
  return fail(ErrorCode::offline_not_cached,
              context +
                  ": this libkernelhub was built without the Hub client "
                  "(KERNELHUB_WITH_HUB=OFF), so it cannot download kernels. Point "
                  "LOCAL_KERNELS=" +
                  std::string(spec.repo) +
                  "=<path> at a kernel-builder build of it, or use a build with the "
                  "Hub client.");
}

void reset_hub_connection(const std::function<void()>& reload) { reload(); }

}  // namespace kernelhub::provider
