#include "kernelhub/hub/receipt_check.hpp"

#include <system_error>

#include "kernelhub/hub/signature_gate.hpp"

namespace kernelhub::hub {
namespace {

namespace fs = std::filesystem;

std::string summary(const std::optional<SignatureReceipt>& receipt) {
  if (!receipt) return "untrusted or unreadable receipt";
  switch (receipt->status) {
    case SignatureReceipt::Status::verified:
      return "verified (" + (receipt->identity.sans.empty() ? "?" : receipt->identity.sans[0]) +
             ")";
    case SignatureReceipt::Status::missing:
      return "unsigned";
    case SignatureReceipt::Status::invalid:
      return "invalid (" + receipt->failure + ")";
  }
  return "?";
}

bool same_verdict(const SignatureReceipt& a, const SignatureReceipt& b) {
  return a.status == b.status && a.failure == b.failure && a.metadata_etag == b.metadata_etag &&
         a.identity.sans == b.identity.sans && a.identity.issuer_v1 == b.identity.issuer_v1 &&
         a.identity.source_repository == b.identity.source_repository &&
         a.identity.build_signer_uri == b.identity.build_signer_uri &&
         a.stated_version == b.stated_version && a.stated_backend == b.stated_backend &&
         a.root_id == b.root_id;
}

}  // namespace

Result<ReceiptReport> recheck_receipts(const cache::KernelCache& cache,
                                       const std::optional<trust::RepoId>& only,
                                       const trust::SignatureSettings& settings) {
  ReceiptReport report;
  KH_TRY_ASSIGN(auto repos, cache.list());
  std::optional<SignatureVerifier> verifier;
  for (const auto& repo : repos) {
    if (only && repo.repo != *only) continue;
    for (const auto& revision : repo.revisions) {
      for (const auto& cached : revision.variants) {
        const std::string& variant = cached.name;
        std::error_code ec;
        if (!fs::exists(cache.signature_receipt_path(repo.repo, revision.commit, variant), ec)) {
          continue;
        }
        if (!verifier) {
          KH_TRY_ASSIGN(verifier, SignatureVerifier::load(settings));
        }
        ++report.checked;
        std::optional<SignatureReceipt> stored;
        if (auto text = cache.read_signature_receipt(repo.repo, revision.commit, variant)) {
          stored = receipt_from_json(*text);
        }
        const SignatureReceipt now =
            verifier->verify_cached(cache, repo.repo, revision.commit, variant);
        if (stored && same_verdict(*stored, now)) continue;
        report.changed.push_back(repo.repo.str() + "@" + revision.commit + " build/" + variant +
                                 ": " + summary(stored) + " -> " + summary(now));
        KH_TRY(cache.write_signature_receipt(repo.repo, revision.commit, variant,
                                             receipt_to_json(now)));
      }
    }
  }
  return report;
}

}  // namespace kernelhub::hub
