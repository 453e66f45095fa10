#include "kernelhub/trust/sigstore/bundle.hpp"

#include <algorithm>

#include "json_access.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "timestamp.hpp"

namespace kernelhub::trust::sigstore {
namespace {

constexpr util::JsonBounds kBundleJson{kMaxBundleBytes, 16, 10'000};

std::optional<BundleVersion> bundle_version(std::string_view media_type) {
  if (media_type == "application/vnd.dev.sigstore.bundle+json;version=0.1") {
    return BundleVersion::v0_1;
  }
  if (media_type == "application/vnd.dev.sigstore.bundle+json;version=0.2") {
    return BundleVersion::v0_2;
  }
  if (media_type == "application/vnd.dev.sigstore.bundle.v0.3+json" ||
      media_type == "application/vnd.dev.sigstore.bundle+json;version=0.3") {
    return BundleVersion::v0_3;
  }
  return std::nullopt;
}

Unexpected invalid(std::string message) {
  return fail(ErrorCode::signature_invalid, std::move(message));
}

Result<void> parse_leaf(const nlohmann::json& material, Bundle& bundle) {
  std::string der;
  if (bundle.version == BundleVersion::v0_3) {
    KH_TRY_ASSIGN(const auto* certificate,
                  object_member(material, "certificate", "verificationMaterial"));
    KH_TRY_ASSIGN(der, bytes_member(*certificate, "rawBytes", "verificationMaterial.certificate"));
  } else {
    // Older bundles carry a pool of certificates whose first entry is the leaf; the rest is
    // never trusted (the chain comes from the trusted root).
    KH_TRY_ASSIGN(const auto* chain,
                  object_member(material, "x509CertificateChain", "verificationMaterial"));
    KH_TRY_ASSIGN(
        const auto* certificates,
        array_member(*chain, "certificates", "verificationMaterial.x509CertificateChain"));
    if (certificates->empty()) return invalid("x509CertificateChain is empty");
    KH_TRY_ASSIGN(der, bytes_member((*certificates)[0], "rawBytes",
                                    "verificationMaterial.x509CertificateChain.certificates[0]"));
  }
  const auto* cursor = reinterpret_cast<const unsigned char*>(der.data());
  X509* leaf = d2i_X509(nullptr, &cursor, static_cast<long>(der.size()));
  if (leaf == nullptr ||
      cursor != reinterpret_cast<const unsigned char*>(der.data()) + der.size()) {
    X509_free(leaf);
    return invalid("the signing certificate is not one DER certificate");
  }
  bundle.leaf = SharedX509(leaf, X509_free);
  bundle.leaf_der = std::move(der);
  return {};
}

Result<void> parse_proof(const nlohmann::json& entry, InclusionProof& proof) {
  const std::string path = "tlogEntries[0].inclusionProof";
  auto raw = object_member(entry, "inclusionProof", "tlogEntries[0]");
  if (!raw) return invalid("the log entry has no inclusion proof");
  const nlohmann::json& json = **raw;
  KH_TRY_ASSIGN(auto log_index, int64_member(json, "logIndex", path));
  KH_TRY_ASSIGN(auto tree_size, int64_member(json, "treeSize", path));
  KH_TRY_ASSIGN(auto root_hash, bytes_member(json, "rootHash", path));
  proof.log_index = log_index;
  proof.tree_size = tree_size;
  proof.root_hash = std::move(root_hash);
  if (const nlohmann::json* hashes = find_member(json, "hashes"); hashes != nullptr) {
    if (!hashes->is_array()) return invalid(path + ".hashes is not an array");
    if (hashes->size() > kMaxProofHashes) {
      return invalid(path + ".hashes has more than " + std::to_string(kMaxProofHashes) +
                     " entries");
    }
    for (const auto& hash : *hashes) {
      if (!hash.is_string()) return invalid(path + ".hashes holds a non-string");
      KH_TRY_ASSIGN(auto bytes,
                    decode_base64(hash.get_ref<const std::string&>(), path + ".hashes"));
      proof.hashes.push_back(std::move(bytes));
    }
  }
  auto checkpoint = object_member(json, "checkpoint", path);
  if (!checkpoint) return invalid("the inclusion proof has no checkpoint");
  KH_TRY_ASSIGN(proof.checkpoint, string_member(**checkpoint, "envelope", path + ".checkpoint"));
  return {};
}

Result<void> parse_entry(const nlohmann::json& material, Bundle& bundle) {
  KH_TRY_ASSIGN(const auto* entries, array_member(material, "tlogEntries", "verificationMaterial"));
  if (entries->size() != 1) return invalid("expected exactly one transparency log entry");
  const nlohmann::json& json = (*entries)[0];
  const std::string path = "tlogEntries[0]";
  TlogEntry& entry = bundle.entry;
  KH_TRY_ASSIGN(entry.log_index, int64_member(json, "logIndex", path));
  KH_TRY_ASSIGN(const auto* log_id, object_member(json, "logId", path));
  KH_TRY_ASSIGN(entry.log_id, bytes_member(*log_id, "keyId", path + ".logId"));
  KH_TRY_ASSIGN(const auto* kind_version, object_member(json, "kindVersion", path));
  KH_TRY_ASSIGN(auto kind, string_member(*kind_version, "kind", path + ".kindVersion"));
  KH_TRY_ASSIGN(auto version, string_member(*kind_version, "version", path + ".kindVersion"));
  entry.kind = std::move(kind);
  entry.version = std::move(version);
  if (entry.version != "0.0.1" && entry.version != "0.0.2") {
    return invalid("log entry version " + entry.version + " is not 0.0.1 or 0.0.2");
  }
  if (find_member(json, "integratedTime") != nullptr) {
    KH_TRY_ASSIGN(auto time, int64_member(json, "integratedTime", path));
    if (time != 0) entry.integrated_time = time;
  }
  if (const nlohmann::json* promise = find_member(json, "inclusionPromise"); promise != nullptr) {
    KH_TRY_ASSIGN(entry.signed_entry_timestamp,
                  bytes_member(*promise, "signedEntryTimestamp", path + ".inclusionPromise"));
  }
  KH_TRY_ASSIGN(entry.canonicalized_body, bytes_member(json, "canonicalizedBody", path));
  return parse_proof(json, entry.proof);
}

Result<void> parse_timestamps(const nlohmann::json& material, Bundle& bundle) {
  const nlohmann::json* data = find_member(material, "timestampVerificationData");
  if (data == nullptr) return {};
  bundle.has_timestamp_data = true;
  const nlohmann::json* list = find_member(*data, "rfc3161Timestamps");
  if (list == nullptr) return {};
  if (!list->is_array()) return invalid("rfc3161Timestamps is not an array");
  if (list->size() > kMaxTimestamps) {
    return invalid("more than " + std::to_string(kMaxTimestamps) + " signed timestamps");
  }
  for (const auto& item : *list) {
    KH_TRY_ASSIGN(auto token, bytes_member(item, "signedTimestamp", "rfc3161Timestamps[]"));
    if (auto decoded = check_rfc3161_decodes(token); !decoded) {
      return invalid("signed timestamp " + std::to_string(bundle.rfc3161_timestamps.size() + 1) +
                     " of " + std::to_string(list->size()) +
                     " cannot be decoded: " + decoded.error().message);
    }
    if (std::find(bundle.rfc3161_timestamps.begin(), bundle.rfc3161_timestamps.end(), token) !=
        bundle.rfc3161_timestamps.end()) {
      return invalid("duplicate signed timestamp");
    }
    bundle.rfc3161_timestamps.push_back(std::move(token));
  }
  return {};
}

Result<void> parse_message_signature(const nlohmann::json& doc, Bundle& bundle) {
  if (find_member(doc, "dsseEnvelope") != nullptr) {
    return invalid(
        "DSSE envelopes are not supported: a kernel signature is a messageSignature over "
        "metadata.json");
  }
  KH_TRY_ASSIGN(const auto* message, object_member(doc, "messageSignature", ""));
  KH_TRY_ASSIGN(bundle.signature, bytes_member(*message, "signature", "messageSignature"));
  if (const nlohmann::json* digest = find_member(*message, "messageDigest"); digest != nullptr) {
    KH_TRY_ASSIGN(auto algorithm,
                  string_member(*digest, "algorithm", "messageSignature.messageDigest"));
    if (algorithm != "SHA2_256") {
      return invalid("messageDigest algorithm " + algorithm + " is not SHA2_256");
    }
    KH_TRY_ASSIGN(bundle.message_digest,
                  bytes_member(*digest, "digest", "messageSignature.messageDigest"));
  }
  return {};
}

Result<Bundle> parse_bundle_document(std::string_view json) {
  KH_TRY_ASSIGN(auto doc,
                util::parse_bounded_json(json, kBundleJson, ErrorCode::signature_invalid));
  if (!doc.is_object()) return invalid("not a JSON object");
  KH_TRY_ASSIGN(auto media_type, string_member(doc, "mediaType", ""));
  const auto version = bundle_version(media_type);
  if (!version) return invalid("unsupported mediaType '" + media_type.substr(0, 100) + "'");
  Bundle bundle;
  bundle.version = *version;
  KH_TRY_ASSIGN(const auto* material, object_member(doc, "verificationMaterial", ""));
  KH_TRY(parse_leaf(*material, bundle));
  KH_TRY(parse_entry(*material, bundle));
  KH_TRY(parse_timestamps(*material, bundle));
  KH_TRY(parse_message_signature(doc, bundle));
  // v0.1 bundles must carry the promise; later ones need a promise or a timestamp, so that
  // there is a source of verified time.
  if (bundle.version == BundleVersion::v0_1 && !bundle.entry.signed_entry_timestamp) {
    return invalid("a v0.1 bundle must carry an inclusion promise");
  }
  if (!bundle.entry.signed_entry_timestamp && !bundle.has_timestamp_data) {
    return invalid("the bundle has neither an inclusion promise nor a signed timestamp");
  }
  return bundle;
}

}  // namespace

Result<Bundle> parse_bundle(std::string_view json) {
  auto bundle = parse_bundle_document(json);
  if (!bundle) return fail(ErrorCode::signature_invalid, "bundle: " + bundle.error().message);
  return bundle;
}

}  // namespace kernelhub::trust::sigstore
