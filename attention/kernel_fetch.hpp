// The network half of kernel_provider: fetching a hub kernel through kernelhubd (or the
// embedded pipeline) and loading the handed-out files. kernel_fetch.cpp does it;
// kernel_fetch_offline.cpp, in a build without the Hub client (KERNELHUB_WITH_HUB=OFF),
// refuses with the LOCAL_KERNELS fix instead. Exactly one of the two is compiled.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "kernelhub/attention/kernel_provider.hpp"
#include "kernelhub/trust/lockfile.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::attention::detail {

// Fetches spec.repo at spec.version, or at the locked commit and variant hashes when
// `locked` is set, verifies and loads it. Errors are thrown as kernel_provider's are.
std::shared_ptr<const loader::LoadedKernel> fetch_hub_kernel(
    const HubKernelSpec& spec, const trust::RepoId& repo,
    const std::optional<trust::LockEntry>& locked, const std::string& context);

// Runs `reload` while no fetch is in flight, then drops the kept daemon connection (it was
// opened with the old environment).
void reset_hub_connection(const std::function<void()>& reload);

// Shared by both halves: a typed exception (KernelRefused for trust and verification,
// BackendUnavailable otherwise) with the context and the fix.
[[noreturn]] void raise_kernel_error(const Error& error, const std::string& context,
                                     const std::string& fix);

}  // namespace kernelhub::attention::detail
