// The logged body must be the bundle's own: a hashedrekord naming this artifact's digest,
// this signature and this signing certificate. Without it, a valid entry for another
// artifact could vouch for this one (CVE-2022-36056).
#include <openssl/err.h>
#include <openssl/pem.h>

#include "json_access.hpp"
#include "kernelhub/trust/digest.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/strings.hpp"
#include "transparency_log.hpp"

namespace kernelhub::trust::sigstore {
namespace {

constexpr util::JsonBounds kLogBodyJson{64u << 10, 16, 1'000};

Unexpected body_error(std::string message) {
  return fail(ErrorCode::signature_invalid, "log body: " + std::move(message));
}

// A PEM certificate (as Rekor v1 stores the verifier) -> its DER bytes, without parsing the
// certificate (it is compared with the bundle's, which was).
std::optional<std::string> pem_to_der(std::string_view pem) {
  const BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return std::nullopt;
  char* name = nullptr;
  char* header = nullptr;
  unsigned char* data = nullptr;
  long length = 0;
  if (PEM_read_bio(bio.get(), &name, &header, &data, &length) != 1) {
    ERR_clear_error();
    return std::nullopt;
  }
  std::optional<std::string> der;
  if (std::string_view(name) == "CERTIFICATE") {
    der.emplace(reinterpret_cast<const char*>(data), static_cast<std::size_t>(length));
  }
  OPENSSL_free(name);
  OPENSSL_free(header);
  OPENSSL_free(data);
  return der;
}

// The Sigstore keyDetails name of the signing certificate's key.
std::string key_details_of(X509* leaf) {
  EVP_PKEY* key = X509_get0_pubkey(leaf);
  switch (key == nullptr ? KeyAlgorithm::rsa_pkcs1_sha256
                         : key_algorithm_of(key).value_or(KeyAlgorithm::rsa_pkcs1_sha256)) {
    case KeyAlgorithm::ecdsa_sha256:
      return "PKIX_ECDSA_P256_SHA_256";
    case KeyAlgorithm::ecdsa_sha384:
      return "PKIX_ECDSA_P384_SHA_384";
    case KeyAlgorithm::ecdsa_sha512:
      return "PKIX_ECDSA_P521_SHA_512";
    case KeyAlgorithm::ed25519:
      return "PKIX_ED25519";
    case KeyAlgorithm::rsa_pkcs1_sha256:
      return {};
  }
  return {};
}

Result<void> check_v001(const nlohmann::json& spec, std::string_view artifact_sha256,
                        std::string_view signature, std::string_view leaf_der) {
  KH_TRY_ASSIGN(const auto* data, object_member(spec, "data", "spec"));
  KH_TRY_ASSIGN(const auto* hash, object_member(*data, "hash", "spec.data"));
  KH_TRY_ASSIGN(auto algorithm, string_member(*hash, "algorithm", "spec.data.hash"));
  KH_TRY_ASSIGN(auto value, string_member(*hash, "value", "spec.data.hash"));
  const auto* digest = reinterpret_cast<const unsigned char*>(artifact_sha256.data());
  if (algorithm != "sha256" || value != util::to_hex({digest, artifact_sha256.size()})) {
    return body_error("it logs another artifact's digest");
  }
  KH_TRY_ASSIGN(const auto* sig, object_member(spec, "signature", "spec"));
  KH_TRY_ASSIGN(auto content, bytes_member(*sig, "content", "spec.signature"));
  if (content != signature) return body_error("it logs another signature");
  KH_TRY_ASSIGN(const auto* public_key, object_member(*sig, "publicKey", "spec.signature"));
  KH_TRY_ASSIGN(auto pem, bytes_member(*public_key, "content", "spec.signature.publicKey"));
  if (pem_to_der(pem) != leaf_der) return body_error("it logs another signing certificate");
  return {};
}

Result<void> check_v002(const nlohmann::json& spec, std::string_view artifact_sha256,
                        std::string_view signature, std::string_view leaf_der, X509* leaf) {
  KH_TRY_ASSIGN(const auto* entry, object_member(spec, "hashedRekordV002", "spec"));
  const std::string path = "spec.hashedRekordV002";
  KH_TRY_ASSIGN(const auto* data, object_member(*entry, "data", path));
  KH_TRY_ASSIGN(auto algorithm, string_member(*data, "algorithm", path + ".data"));
  KH_TRY_ASSIGN(auto digest, bytes_member(*data, "digest", path + ".data"));
  if (algorithm != "SHA2_256" || digest != artifact_sha256) {
    return body_error("it logs another artifact's digest");
  }
  KH_TRY_ASSIGN(const auto* sig, object_member(*entry, "signature", path));
  KH_TRY_ASSIGN(auto content, bytes_member(*sig, "content", path + ".signature"));
  if (content != signature) return body_error("it logs another signature");
  KH_TRY_ASSIGN(const auto* verifier, object_member(*sig, "verifier", path + ".signature"));
  KH_TRY_ASSIGN(const auto* certificate,
                object_member(*verifier, "x509Certificate", path + ".signature.verifier"));
  KH_TRY_ASSIGN(auto raw, bytes_member(*certificate, "rawBytes",
                                       path + ".signature.verifier.x509Certificate"));
  KH_TRY_ASSIGN(auto details, string_member(*verifier, "keyDetails", path + ".signature.verifier"));
  if (raw != leaf_der || details != key_details_of(leaf)) {
    return body_error("it logs another signing certificate");
  }
  return {};
}

}  // namespace

Result<void> check_log_body(const TlogEntry& entry, std::string_view artifact_sha256,
                            std::string_view signature, std::string_view leaf_der, X509* leaf) {
  if (entry.kind != "hashedrekord") {
    return body_error("the entry is a " + entry.kind.substr(0, 50) + ", not a hashedrekord");
  }
  auto body = util::parse_bounded_json(entry.canonicalized_body, kLogBodyJson,
                                       ErrorCode::signature_invalid);
  if (!body) return body_error(body.error().message);
  auto kind = string_member(*body, "kind", "");
  auto api_version = string_member(*body, "apiVersion", "");
  if (!kind || !api_version || *kind != entry.kind || *api_version != entry.version) {
    return body_error("its kind and version differ from the entry's");
  }
  auto spec = object_member(*body, "spec", "");
  if (!spec) return body_error(spec.error().message);
  auto checked = entry.version == "0.0.1"
                     ? check_v001(**spec, artifact_sha256, signature, leaf_der)
                     : check_v002(**spec, artifact_sha256, signature, leaf_der, leaf);
  if (!checked && !checked.error().message.starts_with("log body: ")) {
    return body_error(checked.error().message);
  }
  return checked;
}

}  // namespace kernelhub::trust::sigstore
