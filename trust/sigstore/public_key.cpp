#include "kernelhub/trust/sigstore/public_key.hpp"

#include "kernelhub/trust/digest.hpp"

namespace kernelhub::trust::sigstore {

std::optional<KeyAlgorithm> key_algorithm_from_details(std::string_view details) {
  if (details == "PKIX_ECDSA_P256_SHA_256") return KeyAlgorithm::ecdsa_sha256;
  if (details == "PKIX_ECDSA_P384_SHA_384") return KeyAlgorithm::ecdsa_sha384;
  if (details == "PKIX_ECDSA_P521_SHA_512") return KeyAlgorithm::ecdsa_sha512;
  if (details == "PKIX_ED25519") return KeyAlgorithm::ed25519;
  if (details == "PKCS1_RSA_PKCS1V5" || details == "PKIX_RSA_PKCS1V15_2048_SHA256" ||
      details == "PKIX_RSA_PKCS1V15_3072_SHA256" || details == "PKIX_RSA_PKCS1V15_4096_SHA256") {
    return KeyAlgorithm::rsa_pkcs1_sha256;
  }
  return std::nullopt;
}

std::optional<KeyAlgorithm> key_algorithm_of(EVP_PKEY* key) {
  switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_EC: {
      const int bits = EVP_PKEY_get_bits(key);
      if (bits == 256) return KeyAlgorithm::ecdsa_sha256;
      if (bits == 384) return KeyAlgorithm::ecdsa_sha384;
      if (bits == 521) return KeyAlgorithm::ecdsa_sha512;
      return std::nullopt;
    }
    case EVP_PKEY_ED25519:
      return KeyAlgorithm::ed25519;
    case EVP_PKEY_RSA:
      return KeyAlgorithm::rsa_pkcs1_sha256;
    default:
      return std::nullopt;
  }
}

namespace {

const EVP_MD* digest_of(KeyAlgorithm algorithm) {
  switch (algorithm) {
    case KeyAlgorithm::ecdsa_sha256:
    case KeyAlgorithm::rsa_pkcs1_sha256:
      return sha256_md();
    case KeyAlgorithm::ecdsa_sha384:
      return sha384_md();
    case KeyAlgorithm::ecdsa_sha512:
      return sha512_md();
    case KeyAlgorithm::ed25519:
      return nullptr;  // Ed25519 signs the message itself
  }
  return nullptr;
}

bool key_matches(EVP_PKEY* key, KeyAlgorithm algorithm) {
  const int id = EVP_PKEY_get_base_id(key);
  switch (algorithm) {
    case KeyAlgorithm::ed25519:
      return id == EVP_PKEY_ED25519;
    case KeyAlgorithm::rsa_pkcs1_sha256:
      return id == EVP_PKEY_RSA;
    default:
      return id == EVP_PKEY_EC;
  }
}

}  // namespace

bool verify_signature(EVP_PKEY* key, KeyAlgorithm algorithm, std::string_view data,
                      std::string_view signature) {
  // A key of another type than its details say is a trusted-root error; never let the
  // signature's own encoding pick the algorithm.
  if (key == nullptr || !key_matches(key, algorithm)) return false;
  const EvpMdCtxPtr ctx(EVP_MD_CTX_new());
  if (!ctx) return false;
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, digest_of(algorithm), nullptr, key) != 1) {
    return false;
  }
  const int ok = EVP_DigestVerify(
      ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
      reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return ok == 1;
}

const LogKey* find_log_key(std::span<const LogKey> keys, std::string_view key_id) {
  for (const LogKey& key : keys) {
    if (key.key_id == key_id) return &key;
  }
  return nullptr;
}

}  // namespace kernelhub::trust::sigstore
