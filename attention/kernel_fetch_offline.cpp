// The offline build (KERNELHUB_WITH_HUB=OFF) has no Hub client: a hub kernel comes from
// LOCAL_KERNELS or not at all.
#include "kernel_fetch.hpp"
#include "kernelhub/attention_dispatch.hpp"

namespace kernelhub::attention::detail {

std::shared_ptr<const loader::LoadedKernel> fetch_hub_kernel(
    const HubKernelSpec& spec, const trust::RepoId& /*repo*/,
    const std::optional<trust::LockEntry>& /*locked*/, const std::string& context) {
  throw BackendUnavailable(context +
                           ": this libkernelhub was built without the Hub client "
                           "(KERNELHUB_WITH_HUB=OFF), so it cannot download kernels. Point "
                           "LOCAL_KERNELS=" +
                           std::string(spec.repo) +
                           "=<path> at a kernel-builder build of it, or use a build with the "
                           "Hub client.");
}

void reset_hub_connection(const std::function<void()>& reload) { reload(); }

}  // namespace kernelhub::attention::detail
