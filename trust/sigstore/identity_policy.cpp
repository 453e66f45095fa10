#include "kernelhub/trust/sigstore/identity_policy.hpp"

#include <algorithm>

#include <openssl/x509v3.h>

#include "kernelhub/trust/sigstore/openssl_handles.hpp"

namespace kernelhub::trust::sigstore {
namespace {

constexpr const char* kOidIssuerV1 = "1.3.6.1.4.1.57264.1.1";
constexpr const char* kOidOtherNameSan = "1.3.6.1.4.1.57264.1.7";
constexpr const char* kOidIssuerV2 = "1.3.6.1.4.1.57264.1.8";
constexpr const char* kOidBuildSignerUri = "1.3.6.1.4.1.57264.1.9";
constexpr const char* kOidSourceRepository = "1.3.6.1.4.1.57264.1.12";

Unexpected identity_error(std::string message) {
  return fail(ErrorCode::signature_invalid, "identity: " + std::move(message));
}

std::string asn1_bytes(const ASN1_STRING* value) {
  return {reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
          static_cast<std::size_t>(ASN1_STRING_length(value))};
}

// The extension's raw value (the OCTET STRING's content), nullopt when absent.
std::optional<std::string> extension_value(X509* cert, const char* oid) {
  const Asn1ObjectPtr object(OBJ_txt2obj(oid, 1));
  if (!object) return std::nullopt;
  const int index = X509_get_ext_by_OBJ(cert, object.get(), -1);
  if (index < 0) return std::nullopt;
  return asn1_bytes(X509_EXTENSION_get_data(X509_get_ext(cert, index)));
}

// A v2 extension: its value is a DER UTF8String.
Result<std::optional<std::string>> utf8_extension(X509* cert, const char* oid) {
  const auto raw = extension_value(cert, oid);
  if (!raw) return std::optional<std::string>{};
  const auto* cursor = reinterpret_cast<const unsigned char*>(raw->data());
  ASN1_UTF8STRING* text = d2i_ASN1_UTF8STRING(nullptr, &cursor, static_cast<long>(raw->size()));
  if (text == nullptr ||
      cursor != reinterpret_cast<const unsigned char*>(raw->data()) + raw->size()) {
    ASN1_UTF8STRING_free(text);
    return identity_error(std::string("extension ") + oid + " is not a DER UTF8String");
  }
  std::string value = asn1_bytes(text);
  ASN1_UTF8STRING_free(text);
  return std::optional<std::string>(std::move(value));
}

std::vector<std::string> subject_alt_names(X509* cert) {
  std::vector<std::string> names;
  const GeneralNamesPtr sans(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (!sans) return names;
  const Asn1ObjectPtr other_name_oid(OBJ_txt2obj(kOidOtherNameSan, 1));
  for (int i = 0; i < sk_GENERAL_NAME_num(sans.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(sans.get(), i);
    if (name->type == GEN_URI || name->type == GEN_EMAIL) {
      names.push_back(asn1_bytes(name->d.ia5));
    } else if (name->type == GEN_OTHERNAME && other_name_oid &&
               OBJ_cmp(name->d.otherName->type_id, other_name_oid.get()) == 0 &&
               name->d.otherName->value->type == V_ASN1_UTF8STRING) {
      names.push_back(asn1_bytes(name->d.otherName->value->value.utf8string));
    }
  }
  return names;
}

std::string quoted(const std::optional<std::string>& value) {
  return value ? "'" + value->substr(0, 200) + "'" : std::string("none");
}

}  // namespace

Result<FulcioIdentity> read_fulcio_identity(X509* leaf) {
  FulcioIdentity identity;
  identity.sans = subject_alt_names(leaf);
  identity.issuer_v1 = extension_value(leaf, kOidIssuerV1);
  KH_TRY_ASSIGN(identity.issuer_v2, utf8_extension(leaf, kOidIssuerV2));
  KH_TRY_ASSIGN(identity.build_signer_uri, utf8_extension(leaf, kOidBuildSignerUri));
  KH_TRY_ASSIGN(identity.source_repository, utf8_extension(leaf, kOidSourceRepository));
  return identity;
}

Result<void> check_identity(const FulcioIdentity& identity, const IdentityPolicy& policy) {
  if (policy.issuer) {
    if (identity.issuer_v1 != policy.issuer) {
      return identity_error("OIDC issuer is " + quoted(identity.issuer_v1) + ", expected '" +
                            *policy.issuer + "'");
    }
    if ((policy.require_issuer_v2 || identity.issuer_v2) && identity.issuer_v2 != policy.issuer) {
      return identity_error("OIDC issuer (v2) is " + quoted(identity.issuer_v2) + ", expected '" +
                            *policy.issuer + "'");
    }
  }
  if (!policy.sans.empty() &&
      std::none_of(identity.sans.begin(), identity.sans.end(), [&](const std::string& san) {
        return std::find(policy.sans.begin(), policy.sans.end(), san) != policy.sans.end();
      })) {
    const std::string got = identity.sans.empty() ? "none" : "'" + identity.sans[0] + "'";
    return identity_error("the certificate's identity is " + got + ", expected '" + policy.sans[0] +
                          "'" + (policy.sans.size() > 1 ? " or another listed" : ""));
  }
  if (policy.source_repository && identity.source_repository != policy.source_repository) {
    return identity_error("source repository is " + quoted(identity.source_repository) +
                          ", expected '" + *policy.source_repository + "'");
  }
  if (!policy.build_signer_uris.empty() &&
      (!identity.build_signer_uri ||
       std::find(policy.build_signer_uris.begin(), policy.build_signer_uris.end(),
                 *identity.build_signer_uri) == policy.build_signer_uris.end())) {
    return identity_error("build signer is " + quoted(identity.build_signer_uri) +
                          ", not one of the allowed workflows");
  }
  return {};
}

}  // namespace kernelhub::trust::sigstore
