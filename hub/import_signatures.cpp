#include "hub/import_signatures.hpp"

#include "hub/signature_gate.hpp"

namespace kernelhub::hub {

Result<cache::bundle::SignatureCheck> import_signature_check(
    const trust::SignatureSettings& settings) {
  if (settings.mode == trust::SignatureMode::off) return cache::bundle::SignatureCheck{};
  auto verifier = SignatureVerifier::load(settings);
  if (!verifier) return fail(verifier.error());
  // Copies of both: the check must not depend on a policy kernelhubd may reload meanwhile.
  return cache::bundle::SignatureCheck(
      [settings, verifier = std::move(*verifier)](
          const trust::RepoId& repo, std::optional<int> version, const std::string& variant,
          const std::string& metadata_etag, std::string_view metadata,
          const std::optional<std::string>& sigstore_bundle)
          -> Result<cache::bundle::SignatureVerdict> {
        const SignatureReceipt receipt =
            verifier.verify(variant, metadata_etag, metadata, sigstore_bundle);
        auto verdict = decide_signature(settings, repo, receipt, version);
        if (!verdict) return fail(verdict.error());
        return cache::bundle::SignatureVerdict{receipt_to_json(receipt), std::move(*verdict)};
      });
}

}  // namespace kernelhub::hub
