// [signatures] in the fetch pipeline: each served variant's Sigstore bundle is verified
// before its metadata.json is parsed and before anything is published (FetchPlan's hook),
// the receipt is kept in the cache's state, and a cached variant is judged from its receipt
// or, when that cannot be trusted, verified again from its cached bundle.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "fetch_call.hpp"
#include "kernelhub/hub/fetcher.hpp"

namespace kernelhub::hub {

Result<const SignatureVerifier*> Fetcher::signature_verifier() {
  if (!signature_verifier_) {
    KH_TRY_ASSIGN(signature_verifier_, SignatureVerifier::load(policy_.signatures));
  }
  return &*signature_verifier_;
}

namespace {

// The version a variant's signed metadata.json must state: the requested vN, none for a
// revision.
std::optional<int> version_to_sign(const fetch::Request& request) {
  const auto version = request.ref.version_number();
  return version ? std::optional<int>(static_cast<int>(*version)) : std::nullopt;
}

}  // namespace

Result<void> FetchCall::admit_signature(const fetch::Request& request, SignatureReceipt receipt) {
  KH_TRY_ASSIGN(auto verdict, decide_signature(f_.policy_.signatures, request.repo, receipt,
                                               version_to_sign(request)));
  // Reported by the caller once the fetch succeeds (the client's stderr), not here: a fetch
  // that then fails must not warn about what it never served.
  if (verdict) signature_warnings_.push_back(std::move(*verdict));
  receipts_.push_back(std::move(receipt));
  return ok();
}

Result<void> FetchCall::check_cached_signature(const fetch::Request& request,
                                               const std::string& commit,
                                               const std::string& variant,
                                               const std::vector<fetch::ManifestFile>& files) {
  if (f_.policy_.signatures.mode == trust::SignatureMode::off) return ok();
  const std::string prefix = "build/" + variant + "/";
  const auto metadata = std::find_if(files.begin(), files.end(), [&](const fetch::ManifestFile& f) {
    return f.path == prefix + "metadata.json";
  });
  const std::string etag = metadata == files.end() ? "" : metadata->etag;
  // A trusted receipt of this metadata.json against this root: judged without decoding a key.
  if (const auto stored = f_.cache_.read_signature_receipt(request.repo, commit, variant)) {
    KH_TRY_ASSIGN(auto root_id, trusted_root_id(f_.policy_.signatures));
    if (auto receipt = receipt_from_json(*stored); receipt && receipt->variant == variant &&
                                                   receipt->metadata_etag == etag &&
                                                   receipt->root_id == root_id) {
      return admit_signature(request, std::move(*receipt));
    }
  }
  KH_TRY_ASSIGN(const auto* verifier, f_.signature_verifier());
  SignatureReceipt receipt = verifier->verify_cached(f_.cache_, request.repo, commit, variant);
  if (auto written = f_.cache_.write_signature_receipt(request.repo, commit, variant,
                                                       receipt_to_json(receipt));
      !written) {
    spdlog::warn("cannot keep the signature receipt of {} build/{}: {}", request.repo.str(),
                 variant, written.error().message);
  }
  return admit_signature(request, std::move(receipt));
}

void FetchCall::take_signatures(const fetch::Request& request, FetchResult& result) {
  result.signed_version = version_to_sign(request);
  result.signatures = std::move(receipts_);
  result.manifest.signature_warnings = std::move(signature_warnings_);
  receipts_.clear();
  signature_warnings_.clear();
}

}  // namespace kernelhub::hub
