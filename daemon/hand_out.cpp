#include "hand_out.hpp"

#include "kernelhub/cache/handout.hpp"
#include "kernelhub/hub/signature_gate.hpp"

namespace kernelhub::daemon {

Result<HandOut> hand_out(const Manifest& manifest, int root_fd, const trust::AdminPolicy& policy,
                         AtomicCounters& counters, const HandOutOptions& options) {
  HandOut out;
  for (const auto& receipt : manifest.signatures) {
    auto verdict =
        hub::decide_signature(policy.signatures, manifest.repo, receipt, manifest.signed_version);
    if (!verdict) {
      counters.signatures_refused.fetch_add(1, std::memory_order_relaxed);
      return fail(verdict.error());
    }
    if (*verdict) out.reply.signature_warnings.push_back(std::move(**verdict));
  }
  if (!out.reply.signature_warnings.empty()) {
    counters.signatures_warned.fetch_add(1, std::memory_order_relaxed);
  }
  out.reply.id = options.id;
  out.reply.repo = manifest.repo.str();
  out.reply.commit = manifest.commit;
  out.reply.variants = manifest.variants;
  out.reply.from_cache = options.from_cache;
  out.reply.snapshot_path = manifest.snapshot_path;
  std::vector<cache::HandoutFile> files;
  files.reserve(manifest.files.size());
  for (const auto& file : manifest.files) files.push_back({file.path, file.etag, file.size});
  // The shared cache is read-only once published (0444), whoever wrote it. A warm manifest's
  // snapshot links were checked at its first hand-out.
  auto fds = cache::open_handout(root_fd, manifest.repo, manifest.commit, files,
                                 cache::HandoutOptions{0222, !options.warm});
  if (!fds) return fail(fds.error());
  for (std::size_t i = 0; i < manifest.files.size(); ++i) {
    const auto& file = manifest.files[i];
    proto::FetchedFile entry{file.path, file.size, file.sha256, std::nullopt};
    if (options.with_fds) {
      entry.fd = out.fds.size();
      out.fds.push_back(std::move((*fds)[i]));
    }
    out.reply.files.push_back(std::move(entry));
  }
  return out;
}

}  // namespace kernelhub::daemon
