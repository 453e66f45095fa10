// The public keys of a trusted root (transparency logs, CT logs) and the one signature check
// every part of the verifier uses: ECDSA (P-256/384/521), Ed25519 and RSA PKCS#1 v1.5, each
// with the hash its Sigstore `keyDetails` name fixes.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernelhub/trust/sigstore/openssl_handles.hpp"
#include "kernelhub/trust/sigstore/sigstore_time.hpp"

namespace kernelhub::trust::sigstore {

enum class KeyAlgorithm {
  ecdsa_sha256,  // PKIX_ECDSA_P256_SHA_256, and a Fulcio leaf's P-256 key
  ecdsa_sha384,
  ecdsa_sha512,
  ed25519,
  rsa_pkcs1_sha256,
};

// `keyDetails` of a trusted root -> algorithm; nullopt for one the verifier does not know
// (such keys are skipped, as sigstore-python does).
std::optional<KeyAlgorithm> key_algorithm_from_details(std::string_view details);
// The algorithm a certificate's key implies (EC curve size picks the hash).
std::optional<KeyAlgorithm> key_algorithm_of(EVP_PKEY* key);

// True when `signature` is `key`'s signature of `data` under `algorithm`.
bool verify_signature(EVP_PKEY* key, KeyAlgorithm algorithm, std::string_view data,
                      std::string_view signature);

struct LogKey {
  std::string key_id;  // raw bytes of `logId.keyId`
  std::string base_url;
  SharedPkey key;
  KeyAlgorithm algorithm = KeyAlgorithm::ecdsa_sha256;
  TimeRange valid_for;
};

// The key with this id, or null.
const LogKey* find_log_key(std::span<const LogKey> keys, std::string_view key_id);

}  // namespace kernelhub::trust::sigstore
