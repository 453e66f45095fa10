#include "hand_out.hpp"

#include "kernelhub/cache/handout.hpp"
#include "kernelhub/hub/signature_gate.hpp"

namespace kernelhub::daemon {

Result<HandOut> hand_out(const hub::FetchResult& fetched, int root_fd,
                         const trust::AdminPolicy& policy, AtomicCounters& counters,
                         const HandOutOptions& options) {
  HandOut out;
  fetch::Manifest& manifest = out.manifest;
  manifest = fetched.manifest;
  manifest.signature_warnings.clear();
  for (const auto& receipt : fetched.signatures) {
    auto verdict =
        hub::decide_signature(policy.signatures, manifest.repo, receipt, fetched.signed_version);
    if (!verdict) {
      counters.signatures_refused.fetch_add(1, std::memory_order_relaxed);
      return fail(verdict.error());
    }
    if (*verdict) manifest.signature_warnings.push_back(std::move(**verdict));
  }
  if (!manifest.signature_warnings.empty()) {
    counters.signatures_warned.fetch_add(1, std::memory_order_relaxed);
  }
  std::vector<cache::HandoutFile> files;
  files.reserve(manifest.files.size());
  for (const auto& file : manifest.files) files.push_back({file.path, file.etag, file.size});
  // The shared cache is read-only once published (0444), whoever wrote it. A warm manifest's
  // snapshot links were checked at its first hand-out.
  KH_TRY_ASSIGN(auto fds, cache::open_handout(root_fd, manifest.repo, manifest.commit, files,
                                              cache::HandoutOptions{0222, !options.warm}));
  if (options.with_fds) out.fds = std::move(fds);
  return out;
}

}  // namespace kernelhub::daemon
