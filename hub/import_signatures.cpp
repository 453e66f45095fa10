#include "kernelhub/hub/import_signatures.hpp"

#include "kernelhub/hub/signature_gate.hpp"

namespace kernelhub::hub {

Result<cache::bundle::SignatureCheck> import_signature_check(
    const trust::SignatureSettings& settings) {
  if (settings.mode == trust::SignatureMode::off) return cache::bundle::SignatureCheck{};
  KH_TRY_ASSIGN(auto verifier, SignatureVerifier::load(settings));
  // Copies of both: the check must not depend on a policy kernelhubd may reload meanwhile.
  return cache::bundle::SignatureCheck(
      [settings, verifier = std::move(verifier)](
          const trust::RepoId& repo, const std::vector<int>& versions, const std::string& variant,
          const std::string& metadata_etag, std::string_view metadata,
          const std::optional<std::string>& sigstore_bundle)
          -> Result<cache::bundle::SignatureVerdict> {
        // Verified once; judged for each claimed version (the binding), or for none.
        const SignatureReceipt receipt =
            verifier.verify(variant, metadata_etag, metadata, sigstore_bundle);
        std::vector<std::optional<int>> judged(versions.begin(), versions.end());
        if (judged.empty()) judged.emplace_back(std::nullopt);
        cache::bundle::SignatureVerdict out{receipt_to_json(receipt), {}};
        for (const auto& version : judged) {
          KH_TRY_ASSIGN(auto verdict, decide_signature(settings, repo, receipt, version));
          if (verdict) out.warnings.push_back(std::move(*verdict));
        }
        return out;
      });
}

}  // namespace kernelhub::hub
