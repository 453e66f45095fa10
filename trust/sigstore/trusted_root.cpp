#include "kernelhub/trust/sigstore/trusted_root.hpp"

#include <openssl/err.h>

#include "json_access.hpp"
#include "kernelhub/util/json_bounds.hpp"

namespace kernelhub::trust::sigstore {
namespace {

constexpr util::JsonBounds kTrustedRootJson{kMaxTrustedRootBytes, 32, 20'000};
constexpr std::string_view kMediaType = "application/vnd.dev.sigstore.trustedroot+json;version=0.1";

Result<TimeRange> parse_valid_for(const nlohmann::json& holder, const std::string& path) {
  TimeRange range;
  const nlohmann::json* valid_for = find_member(holder, "validFor");
  if (valid_for == nullptr) return range;  // absent: always valid
  KH_TRY_ASSIGN(auto start, string_member(*valid_for, "start", path + ".validFor"));
  const auto start_seconds = parse_rfc3339(start);
  if (!start_seconds) {
    return fail(ErrorCode::signature_invalid, path + ".validFor.start is not an RFC 3339 time");
  }
  range.start = *start_seconds;
  if (find_member(*valid_for, "end") != nullptr) {
    KH_TRY_ASSIGN(auto end, string_member(*valid_for, "end", path + ".validFor"));
    range.end = parse_rfc3339(end);
    if (!range.end) {
      return fail(ErrorCode::signature_invalid, path + ".validFor.end is not an RFC 3339 time");
    }
  }
  return range;
}

// SubjectPublicKeyInfo DER; the oldest RSA CT log keys are PKCS#1 RSAPublicKey DER.
EvpPkeyPtr decode_public_key(const std::string& raw, KeyAlgorithm algorithm) {
  const auto* der = reinterpret_cast<const unsigned char*>(raw.data());
  EvpPkeyPtr key(d2i_PUBKEY(nullptr, &der, static_cast<long>(raw.size())));
  if (!key && algorithm == KeyAlgorithm::rsa_pkcs1_sha256) {
    der = reinterpret_cast<const unsigned char*>(raw.data());
    key.reset(d2i_PublicKey(EVP_PKEY_RSA, nullptr, &der, static_cast<long>(raw.size())));
  }
  ERR_clear_error();
  return key;
}

// Appends the log's key unless its type is one the verifier does not know.
Result<void> add_log_key(const nlohmann::json& log, const std::string& path,
                         std::vector<LogKey>& keys) {
  KH_TRY_ASSIGN(const auto* public_key, object_member(log, "publicKey", path));
  const std::string key_path = path + ".publicKey";
  KH_TRY_ASSIGN(auto details, string_member(*public_key, "keyDetails", key_path));
  const auto algorithm = key_algorithm_from_details(details);
  if (!algorithm) return {};
  KH_TRY_ASSIGN(auto raw, bytes_member(*public_key, "rawBytes", key_path));
  EvpPkeyPtr key = decode_public_key(raw, *algorithm);
  if (!key) return fail(ErrorCode::signature_invalid, key_path + ".rawBytes is not a public key");
  KH_TRY_ASSIGN(auto valid_for, parse_valid_for(*public_key, key_path));
  LogKey entry;
  entry.algorithm = *algorithm;
  entry.valid_for = valid_for;
  if (const nlohmann::json* base_url = find_member(log, "baseUrl");
      base_url != nullptr && base_url->is_string()) {
    entry.base_url = base_url->get<std::string>();
  }
  KH_TRY_ASSIGN(const auto* log_id, object_member(log, "logId", path));
  KH_TRY_ASSIGN(entry.key_id, bytes_member(*log_id, "keyId", path + ".logId"));
  entry.key = SharedPkey(key.release(), EVP_PKEY_free);
  keys.push_back(std::move(entry));
  return {};
}

Result<CertificateAuthority> parse_authority(const nlohmann::json& ca, const std::string& path) {
  CertificateAuthority authority;
  KH_TRY_ASSIGN(const auto* chain, object_member(ca, "certChain", path));
  KH_TRY_ASSIGN(const auto* certificates,
                array_member(*chain, "certificates", path + ".certChain"));
  for (std::size_t i = 0; i < certificates->size(); ++i) {
    const std::string cert_path = path + ".certChain.certificates[" + std::to_string(i) + "]";
    KH_TRY_ASSIGN(auto raw, bytes_member((*certificates)[i], "rawBytes", cert_path));
    const auto* der = reinterpret_cast<const unsigned char*>(raw.data());
    X509* cert = d2i_X509(nullptr, &der, static_cast<long>(raw.size()));
    if (cert == nullptr) {
      return fail(ErrorCode::signature_invalid, cert_path + " is not a DER certificate");
    }
    authority.chain.emplace_back(cert, X509_free);
  }
  if (authority.chain.empty()) {
    return fail(ErrorCode::signature_invalid, path + ".certChain has no certificate");
  }
  KH_TRY_ASSIGN(authority.valid_for, parse_valid_for(ca, path));
  return authority;
}

Result<void> parse_sections(const nlohmann::json& doc, TrustedRoot& root) {
  const auto each = [&](std::string_view key, auto&& handle) -> Result<void> {
    const nlohmann::json* list = find_member(doc, key);
    if (list == nullptr) return {};
    if (!list->is_array()) {
      return fail(ErrorCode::signature_invalid, std::string(key) + " is not an array");
    }
    for (std::size_t i = 0; i < list->size(); ++i) {
      KH_TRY(handle((*list)[i], std::string(key) + "[" + std::to_string(i) + "]"));
    }
    return {};
  };
  KH_TRY(each("tlogs", [&](const nlohmann::json& v, const std::string& p) {
    return add_log_key(v, p, root.tlogs);
  }));
  KH_TRY(each("ctlogs", [&](const nlohmann::json& v, const std::string& p) {
    return add_log_key(v, p, root.ctlogs);
  }));
  const auto add_authority = [](std::vector<CertificateAuthority>& into) {
    return [&into](const nlohmann::json& v, const std::string& p) -> Result<void> {
      KH_TRY_ASSIGN(auto authority, parse_authority(v, p));
      into.push_back(std::move(authority));
      return {};
    };
  };
  KH_TRY(each("certificateAuthorities", add_authority(root.certificate_authorities)));
  KH_TRY(each("timestampAuthorities", add_authority(root.timestamp_authorities)));
  return {};
}

}  // namespace

Result<TrustedRoot> parse_trusted_root(std::string_view json) {
  const auto refuse = [](std::string message) {
    return fail(ErrorCode::policy, "trusted root: " + std::move(message));
  };
  auto doc = util::parse_bounded_json(json, kTrustedRootJson);
  if (!doc) return refuse(doc.error().message);
  auto media_type = string_member(*doc, "mediaType", "");
  if (!media_type) return refuse(media_type.error().message);
  if (*media_type != kMediaType) return refuse("unsupported mediaType '" + *media_type + "'");
  TrustedRoot root;
  if (auto parsed = parse_sections(*doc, root); !parsed) return refuse(parsed.error().message);
  if (root.certificate_authorities.empty()) return refuse("no certificate authority (Fulcio)");
  if (root.tlogs.empty()) return refuse("no transparency log key of a known type");
  if (root.ctlogs.empty()) return refuse("no CT log key of a known type");
  return root;
}

}  // namespace kernelhub::trust::sigstore
