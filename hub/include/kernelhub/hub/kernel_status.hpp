// `kernel-status.toml` at the root of a kernel repo: today one kind, a redirect to another
// repo (research/kernels-library.md, kernels' status.py). A redirect names a new publisher,
// so the fetcher re-takes the trust decision for the destination before following it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub {

inline constexpr std::string_view kKernelStatusFile = "kernel-status.toml";

struct KernelRedirect {
  trust::RepoId destination;
  std::string revision = "main";
};

// nullopt: the file says nothing we act on. malformed_response: not TOML, no `kind`, an
// unknown kind, or a redirect without a valid destination.
Result<std::optional<KernelRedirect>> parse_kernel_status(std::string_view toml_text);

}  // namespace kernelhub::hub
