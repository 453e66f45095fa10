#include "certificate.hpp"

#include <openssl/err.h>

namespace kernelhub::trust::sigstore {
namespace {

Unexpected chain_error(std::string message) {
  return fail(ErrorCode::signature_invalid, "certificate chain: " + std::move(message));
}

// One CA's verdict on `leaf` at `time`: the chain, or OpenSSL's reason.
Result<std::vector<SharedX509>> verify_under(X509* leaf, const CertificateAuthority& authority,
                                             UnixSeconds time) {
  const X509StorePtr store(X509_STORE_new());
  const X509StackPtr intermediates(sk_X509_new_null());
  const X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !intermediates || !ctx) return chain_error("out of memory");
  // The trusted root lists the chain issuer-first; its last certificate is the anchor.
  if (X509_STORE_add_cert(store.get(), authority.chain.back().get()) != 1) {
    return chain_error("cannot use the CA's root certificate");
  }
  for (std::size_t i = 0; i + 1 < authority.chain.size(); ++i) {
    X509* cert = authority.chain[i].get();
    if (X509_up_ref(cert) != 1 || sk_X509_push(intermediates.get(), cert) <= 0) {
      return chain_error("out of memory");
    }
  }
  if (X509_STORE_CTX_init(ctx.get(), store.get(), leaf, intermediates.get()) != 1) {
    return chain_error("cannot start chain verification");
  }
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  X509_VERIFY_PARAM_set_time(param, static_cast<time_t>(time));
  // Fulcio leaves carry codeSigning, not clientAuth: no purpose is enforced here, key usage
  // is checked on its own (check_leaf_usage).
  if (X509_verify_cert(ctx.get()) != 1) {
    return chain_error(X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get())));
  }
  std::vector<SharedX509> chain;
  STACK_OF(X509)* built = X509_STORE_CTX_get0_chain(ctx.get());
  for (int i = 1; i < sk_X509_num(built); ++i) {
    X509* cert = sk_X509_value(built, i);
    if (X509_up_ref(cert) != 1) return chain_error("out of memory");
    chain.emplace_back(cert, X509_free);
  }
  return chain;
}

}  // namespace

Result<std::vector<SharedX509>> verify_chain_at(X509* leaf,
                                                std::span<const CertificateAuthority> authorities,
                                                UnixSeconds time) {
  // The last CA's refusal (already "certificate chain: ..."), or why none was tried.
  std::optional<Error> refusal;
  for (const CertificateAuthority& authority : authorities) {
    if (!authority.valid_for.contains(time)) continue;
    auto chain = verify_under(leaf, authority, time);
    ERR_clear_error();
    if (chain) return chain;
    refusal = chain.error();
  }
  if (refusal) return fail(std::move(*refusal));
  return chain_error("no Fulcio CA of the trusted root is valid at the signing time");
}

Result<void> check_leaf_usage(X509* leaf) {
  const uint32_t flags = X509_get_extension_flags(leaf);
  if ((flags & EXFLAG_INVALID) != 0) {
    return fail(ErrorCode::signature_invalid,
                "key usage: the certificate's extensions are invalid");
  }
  if ((flags & EXFLAG_KUSAGE) == 0 || (X509_get_key_usage(leaf) & KU_DIGITAL_SIGNATURE) == 0) {
    return fail(ErrorCode::signature_invalid,
                "key usage: the signing certificate is not for digital signatures");
  }
  if ((flags & EXFLAG_XKUSAGE) == 0 || (X509_get_extended_key_usage(leaf) & XKU_CODE_SIGN) == 0) {
    return fail(ErrorCode::signature_invalid,
                "key usage: the signing certificate is not for code signing");
  }
  return {};
}

Result<TimeRange> certificate_validity(X509* cert) {
  const auto not_before = asn1_time_seconds(X509_get0_notBefore(cert));
  const auto not_after = asn1_time_seconds(X509_get0_notAfter(cert));
  if (!not_before || !not_after) {
    return fail(ErrorCode::signature_invalid,
                "certificate chain: the signing certificate's validity is malformed");
  }
  return TimeRange{*not_before, *not_after};
}

}  // namespace kernelhub::trust::sigstore
