// The network half of the provider: a hub kernel's files through kernelhubd (or the embedded
// pipeline). kernel_fetch.cpp does it; kernel_fetch_offline.cpp, in a build without the Hub
// client (KERNELHUB_WITH_HUB=OFF), refuses with the LOCAL_KERNELS fix instead. Exactly one
// of the two is compiled.
#pragma once

#include <functional>
#include <string>

#include "kernelhub/fetch/request.hpp"
#include "kernelhub/provider/kernel_provider.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::provider {

// Fetches `request` (spec's repo at its version or revision, or at the locked commit) for the
// libtorch and device of this process, verified; the files of the chosen variant. Errors
// start with `context` and carry the fix.
Result<ProvidedKernel> fetch_hub_source(const fetch::Request& request, const HubKernelSpec& spec,
                                        const std::string& context);

// Runs `reload` while no fetch is in flight, then drops the kept daemon connection (it was
// opened with the old environment).
void reset_hub_connection(const std::function<void()>& reload);

}  // namespace kernelhub::provider
