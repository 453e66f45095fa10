// `kernelhub verify`'s second half: every signature receipt in the cache verified again from
// its cached metadata.json and bundle, against the policy's trusted root. A receipt that
// disagrees (forged, written by someone else, verified against another root) is rewritten
// and reported.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernelhub/cache/kernel_cache.hpp"
#include "kernelhub/trust/repo_id.hpp"
#include "kernelhub/trust/signature_settings.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub {

struct ReceiptReport {
  std::size_t checked = 0;
  std::vector<std::string> changed;  // "<repo>@<commit> build/<variant>: <was> -> <now>"
};

Result<ReceiptReport> recheck_receipts(const cache::KernelCache& cache,
                                       const std::optional<trust::RepoId>& only,
                                       const trust::SignatureSettings& settings);

}  // namespace kernelhub::hub
