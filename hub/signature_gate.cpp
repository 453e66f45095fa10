#include "kernelhub/hub/signature_gate.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "kernelhub/trust/digest.hpp"
#include "kernelhub/trust/metadata.hpp"
#include "kernelhub/trust/policy.hpp"
#include "kernelhub/trust/sigstore/bundle.hpp"
#include "kernelhub/trust/sigstore/pinned_roots.hpp"
#include "kernelhub/trust/sigstore/verifier.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/read_file.hpp"
#include "kernelhub/variant/variant_name.hpp"

namespace kernelhub::hub {
namespace {

namespace sigstore = trust::sigstore;
using Status = SignatureReceipt::Status;

constexpr util::JsonBounds kReceiptJson{64u << 10, 8, 1'000};

std::string_view status_name(Status status) {
  switch (status) {
    case Status::verified:
      return "verified";
    case Status::missing:
      return "missing";
    case Status::invalid:
      return "invalid";
  }
  return "invalid";
}

// The backend family a variant folder is built for ("cuda", "cpu", ...); nullopt when the
// name does not say (a universal noarch build, an unknown scheme).
std::optional<std::string> folder_backend(std::string_view variant) {
  const auto parsed = variant::parse_variant_name(variant);
  if (!parsed) return std::nullopt;
  if (parsed->framework != variant::Framework::noarch) return parsed->backend.family;
  if (parsed->noarch_backend == "universal") return std::nullopt;
  if (parsed->noarch_backend == "npu") return std::string("cann");
  return parsed->noarch_backend;
}

// The signed metadata.json must be about what was asked for: a validly signed variant of
// another version or another backend must not stand in for this one.
std::optional<std::string> binding_failure(const SignatureReceipt& receipt,
                                           std::optional<int> requested_version) {
  if (requested_version && receipt.stated_version &&
      *receipt.stated_version != std::to_string(*requested_version)) {
    return "binding: the signed metadata.json is of version " + *receipt.stated_version + ", v" +
           std::to_string(*requested_version) + " was requested";
  }
  const auto backend = folder_backend(receipt.variant);
  if (backend && receipt.stated_backend && *receipt.stated_backend != *backend) {
    return "binding: the signed metadata.json is a " + *receipt.stated_backend + " build, build/" +
           receipt.variant + " is a " + *backend + " folder";
  }
  return std::nullopt;
}

}  // namespace

std::string receipt_to_json(const SignatureReceipt& receipt) {
  nlohmann::json doc = {{"receipt", 1},
                        {"status", status_name(receipt.status)},
                        {"variant", receipt.variant},
                        {"metadata_etag", receipt.metadata_etag},
                        {"root_id", receipt.root_id},
                        {"failure", receipt.failure},
                        {"signed_at", receipt.signed_at},
                        {"sans", receipt.identity.sans}};
  const auto put = [&](const char* key, const std::optional<std::string>& value) {
    doc[key] = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  };
  put("issuer", receipt.identity.issuer_v1);
  put("issuer_v2", receipt.identity.issuer_v2);
  put("build_signer_uri", receipt.identity.build_signer_uri);
  put("source_repository", receipt.identity.source_repository);
  put("stated_version", receipt.stated_version);
  put("stated_backend", receipt.stated_backend);
  return doc.dump();
}

std::optional<SignatureReceipt> receipt_from_json(std::string_view text) {
  auto doc = util::parse_bounded_json(text, kReceiptJson);
  if (!doc || !doc->is_object() || doc->value("receipt", 0) != 1) return std::nullopt;
  try {
    SignatureReceipt receipt;
    const auto status = doc->at("status").get<std::string>();
    if (status == "verified") {
      receipt.status = Status::verified;
    } else if (status == "missing") {
      receipt.status = Status::missing;
    } else if (status == "invalid") {
      receipt.status = Status::invalid;
    } else {
      return std::nullopt;
    }
    receipt.variant = doc->at("variant").get<std::string>();
    receipt.metadata_etag = doc->at("metadata_etag").get<std::string>();
    receipt.root_id = doc->at("root_id").get<std::string>();
    receipt.failure = doc->at("failure").get<std::string>();
    receipt.signed_at = doc->at("signed_at").get<std::int64_t>();
    receipt.identity.sans = doc->at("sans").get<std::vector<std::string>>();
    const auto get = [&](const char* key) -> std::optional<std::string> {
      const auto& value = doc->at(key);
      if (value.is_null()) return std::nullopt;
      return value.get<std::string>();
    };
    receipt.identity.issuer_v1 = get("issuer");
    receipt.identity.issuer_v2 = get("issuer_v2");
    receipt.identity.build_signer_uri = get("build_signer_uri");
    receipt.identity.source_repository = get("source_repository");
    receipt.stated_version = get("stated_version");
    receipt.stated_backend = get("stated_backend");
    return receipt;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

Result<std::string> trusted_root_id(const trust::SignatureSettings& settings) {
  KH_TRY_ASSIGN(auto text, sigstore::trusted_root_json(settings.trusted_root));
  return trust::sha256_hex(text);
}

Result<SignatureVerifier> SignatureVerifier::load(const trust::SignatureSettings& settings) {
  KH_TRY_ASSIGN(auto text, sigstore::trusted_root_json(settings.trusted_root));
  // Parsing a root decodes every key and certificate in it (~0.5 ms for production's); a
  // process parses each distinct root once (kernelhubd builds a verifier per download).
  static std::mutex parsed_mutex;
  static std::map<std::string, std::shared_ptr<const sigstore::TrustedRoot>> parsed;
  SignatureVerifier verifier;
  verifier.root_id_ = trust::sha256_hex(text);
  std::lock_guard lock(parsed_mutex);
  auto& cached = parsed[verifier.root_id_];
  if (!cached) {
    auto root = sigstore::parse_trusted_root(text);
    if (!root) {
      parsed.erase(verifier.root_id_);
      return fail(ErrorCode::policy, "[signatures] trusted_root " + settings.trusted_root + ": " +
                                         root.error().message);
    }
    cached = std::make_shared<const sigstore::TrustedRoot>(std::move(*root));
  }
  verifier.root_ = cached;
  return verifier;
}

Result<void> check_signature_settings(const trust::SignatureSettings& settings) {
  if (settings.mode == trust::SignatureMode::off) return ok();
  KH_TRY(SignatureVerifier::load(settings));
  return ok();
}

Result<trust::AdminPolicy> load_checked_policy(const std::filesystem::path& path) {
  KH_TRY_ASSIGN(auto policy, trust::load_policy_file(path));
  KH_TRY(check_signature_settings(policy.signatures));
  return policy;
}

SignatureReceipt SignatureVerifier::verify(std::string variant, std::string metadata_etag,
                                           std::string_view metadata_json,
                                           const BundleBytes& bundle_json) const {
  SignatureReceipt receipt;
  receipt.variant = std::move(variant);
  receipt.metadata_etag = std::move(metadata_etag);
  receipt.root_id = root_id_;
  if (!bundle_json) {
    receipt.status = Status::invalid;
    receipt.failure = "bundle: " + bundle_json.error().message;
    return receipt;
  }
  if (!*bundle_json) {
    receipt.status = Status::missing;
    receipt.failure = "signature: the variant has no metadata.json.sigstore";
    return receipt;
  }
  // The identity is recorded, not judged here: decide_signature applies the policy in force
  // at each hand-out.
  const trust::IdentityPolicy any_signer;
  auto verified =
      sigstore::verify_artifact_bundle(metadata_json, **bundle_json, *root_, any_signer);
  if (!verified) {
    receipt.status = Status::invalid;
    receipt.failure = verified.error().message;
    return receipt;
  }
  receipt.status = Status::verified;
  receipt.identity = std::move(verified->identity);
  receipt.signed_at = verified->verified_times.front();
  // Only now, with its signature holding, is metadata.json parsed.
  if (auto metadata = trust::parse_kernel_metadata(metadata_json)) {
    receipt.stated_version = metadata->version;
    receipt.stated_backend = metadata->backend_type;
  } else {
    receipt.status = Status::invalid;
    receipt.failure =
        "metadata: the signed metadata.json is malformed: " + metadata.error().message;
  }
  return receipt;
}

SignatureReceipt SignatureVerifier::verify_cached(const cache::KernelCache& cache,
                                                  const trust::RepoId& repo,
                                                  const std::string& commit,
                                                  const std::string& variant) const {
  const std::filesystem::path dir = cache.snapshot_dir(repo, commit) / "build" / variant;
  std::error_code ec;
  const std::filesystem::path link = std::filesystem::read_symlink(dir / "metadata.json", ec);
  const std::string etag = ec ? std::string() : link.filename().string();
  const auto text = util::read_small_file(dir / "metadata.json", trust::kMaxMetadataBytes);
  BundleBytes bundle = std::optional<std::string>();
  if (text) {
    auto read =
        util::read_small_file(dir / std::string(kSignatureBundleFile), sigstore::kMaxBundleBytes);
    if (read) {
      bundle = std::optional<std::string>(std::move(*read));
    } else if (read.error().code != ErrorCode::io) {  // there, but over the cap or no file
      bundle = fail(read.error());
    }
  }
  return verify(variant, etag, text ? std::string_view(*text) : std::string_view(), bundle);
}

Result<std::optional<std::string>> decide_signature(const trust::SignatureSettings& settings,
                                                    const trust::RepoId& repo,
                                                    const SignatureReceipt& receipt,
                                                    std::optional<int> requested_version) {
  if (settings.mode == trust::SignatureMode::off) return std::optional<std::string>{};
  std::optional<std::string> failure;
  ErrorCode code = ErrorCode::signature_invalid;
  if (receipt.status == Status::missing) {
    code = ErrorCode::signature_missing;
    failure = receipt.failure;
  } else if (receipt.status == Status::invalid) {
    failure = receipt.failure;
  } else if (const auto policy = settings.publishers.find(repo.org);
             policy == settings.publishers.end()) {
    failure = "identity: no signing identity is configured for " + repo.org +
              " (add [signatures.publishers." + repo.org + "] to the admin policy)";
  } else if (auto identity = sigstore::check_identity(receipt.identity, policy->second);
             !identity) {
    failure = identity.error().message;
  } else {
    failure = binding_failure(receipt, requested_version);
  }
  if (!failure) return std::optional<std::string>{};
  const std::string what = repo.str() + " build/" + receipt.variant + ": " + *failure;
  if (settings.mode == trust::SignatureMode::enforce) {
    return fail(code, what + " (refused: [signatures] mode is enforce)");
  }
  return std::optional<std::string>("unverified signature: " + what +
                                    " (served: [signatures] mode is warn)");
}

}  // namespace kernelhub::hub
