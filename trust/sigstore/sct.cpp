// RFC 6962 §3.2 SCT verification for the precertificate SCT Fulcio embeds. OpenSSL parses
// the SCT list but validates SCTs only against a CT log store read from a file, so the
// signed structure is rebuilt here from the parsed fields.
#include <openssl/ct.h>

#include <cstdint>
#include <string>

#include "certificate.hpp"
#include "der.hpp"
#include "kernelhub/trust/digest.hpp"

namespace kernelhub::trust::sigstore {
namespace {

struct SctListFree {
  void operator()(STACK_OF(SCT) * list) const noexcept { SCT_LIST_free(list); }
};
using SctListPtr = std::unique_ptr<STACK_OF(SCT), SctListFree>;

Unexpected sct_error(std::string message) {
  return fail(ErrorCode::signature_invalid, "SCT: " + std::move(message));
}

void put_be(std::string& out, std::uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// 1.3.6.1.4.1.11129.2.4.2, the embedded SCT list extension (RFC 6962 §3.3), as DER.
constexpr std::string_view kSctListOid = "\x06\x0a\x2b\x06\x01\x04\x01\xd6\x79\x02\x04\x02";

// The issuer key hash of RFC 6962: SHA-256 of the issuer's SubjectPublicKeyInfo as the
// certificate encodes it (no key decoding or re-encoding through the providers).
std::string issuer_key_hash(X509* issuer) {
  unsigned char* der = nullptr;
  const int length = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(issuer), &der);
  if (length <= 0) return {};
  Sha256 hasher;
  hasher.update(der, static_cast<std::size_t>(length));
  OPENSSL_free(der);
  const std::vector<unsigned char> digest = hasher.final_bytes();
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

bool is_precert_signer(X509* cert) {
  const ExtKeyUsagePtr usage(static_cast<EXTENDED_KEY_USAGE*>(
      X509_get_ext_d2i(cert, NID_ext_key_usage, nullptr, nullptr)));
  if (!usage) return false;
  for (int i = 0; i < sk_ASN1_OBJECT_num(usage.get()); ++i) {
    if (OBJ_obj2nid(sk_ASN1_OBJECT_value(usage.get(), i)) == NID_ct_precert_signer) return true;
  }
  return false;
}

// The issuer whose key hash the SCT covers: the chain's first certificate, or the one
// above it when the first is a CT precertificate signing certificate.
Result<X509*> sct_issuer(std::span<const SharedX509> chain) {
  if (chain.empty()) return sct_error("no issuer certificate");
  X509* issuer = chain[0].get();
  if (is_precert_signer(issuer)) {
    if (chain.size() < 2) return sct_error("no issuer above the precertificate signer");
    issuer = chain[1].get();
  }
  if (X509_check_ca(issuer) == 0) return sct_error("the issuer is not a CA");
  return issuer;
}

}  // namespace

Result<void> verify_embedded_sct(X509* leaf, std::string_view leaf_der,
                                 std::span<const SharedX509> chain,
                                 std::span<const LogKey> ct_logs) {
  const SctListPtr list(
      static_cast<STACK_OF(SCT)*>(X509_get_ext_d2i(leaf, NID_ct_precert_scts, nullptr, nullptr)));
  if (!list) return sct_error("the signing certificate carries no SCT");
  if (sk_SCT_num(list.get()) != 1) {
    return sct_error("expected one SCT, found " + std::to_string(sk_SCT_num(list.get())));
  }
  SCT* sct = sk_SCT_value(list.get(), 0);
  if (SCT_get_version(sct) != SCT_VERSION_V1) return sct_error("not a v1 SCT");
  const int signature_nid = SCT_get_signature_nid(sct);
  if (signature_nid != NID_ecdsa_with_SHA256 && signature_nid != NID_sha256WithRSAEncryption) {
    return sct_error("only SHA-256 SCT signatures are accepted");
  }
  unsigned char* log_id_bytes = nullptr;
  const std::size_t log_id_length = SCT_get0_log_id(sct, &log_id_bytes);
  const std::string log_id(reinterpret_cast<const char*>(log_id_bytes), log_id_length);
  const LogKey* log = find_log_key(ct_logs, log_id);
  if (log == nullptr) return sct_error("signed by a CT log the trusted root does not hold");

  KH_TRY_ASSIGN(X509 * issuer, sct_issuer(chain));
  const std::string key_hash = issuer_key_hash(issuer);
  if (key_hash.empty()) return sct_error("the issuer's key is unreadable");
  const auto tbs = tbs_without_extension(leaf_der, kSctListOid);
  if (!tbs) return sct_error("cannot take the SCT list out of the certificate");
  if (tbs->size() >= (1u << 24)) return sct_error("the certificate is too large");

  unsigned char* extensions = nullptr;
  const std::size_t extensions_length = SCT_get0_extensions(sct, &extensions);
  if (extensions_length >= (1u << 16)) return sct_error("SCT extensions too large");
  std::string signed_data;
  signed_data.push_back(0);  // sct_version v1
  signed_data.push_back(0);  // signature_type certificate_timestamp
  put_be(signed_data, SCT_get_timestamp(sct), 8);
  put_be(signed_data, 1, 2);  // entry_type precert_entry
  signed_data += key_hash;
  put_be(signed_data, tbs->size(), 3);
  signed_data += *tbs;
  put_be(signed_data, extensions_length, 2);
  signed_data.append(reinterpret_cast<const char*>(extensions), extensions_length);

  unsigned char* signature = nullptr;
  const std::size_t signature_length = SCT_get0_signature(sct, &signature);
  if (!verify_signature(log->key.get(), log->algorithm, signed_data,
                        {reinterpret_cast<const char*>(signature), signature_length})) {
    return sct_error("the SCT's signature does not verify with its CT log's key");
  }
  return {};
}

}  // namespace kernelhub::trust::sigstore
