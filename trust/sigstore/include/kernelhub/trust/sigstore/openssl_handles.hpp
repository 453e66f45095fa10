// RAII owners for the OpenSSL objects the Sigstore verifier holds. Each alias frees with
// the object's own free function; shared_ptr is used where the trusted root hands the same
// key or certificate to many verifications.
#pragma once

#include <memory>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ts.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace kernelhub::trust::sigstore {

template <auto FreeFn>
struct OpensslFree {
  template <class T>
  void operator()(T* object) const noexcept {
    FreeFn(object);
  }
};

using X509Ptr = std::unique_ptr<X509, OpensslFree<X509_free>>;
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, OpensslFree<EVP_PKEY_free>>;
using EvpMdCtxPtr = std::unique_ptr<EVP_MD_CTX, OpensslFree<EVP_MD_CTX_free>>;
using X509StorePtr = std::unique_ptr<X509_STORE, OpensslFree<X509_STORE_free>>;
using X509StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, OpensslFree<X509_STORE_CTX_free>>;
using BioPtr = std::unique_ptr<BIO, OpensslFree<BIO_free_all>>;
using TsRespPtr = std::unique_ptr<TS_RESP, OpensslFree<TS_RESP_free>>;
using TsVerifyCtxPtr = std::unique_ptr<TS_VERIFY_CTX, OpensslFree<TS_VERIFY_CTX_free>>;
using Asn1TimePtr = std::unique_ptr<ASN1_TIME, OpensslFree<ASN1_TIME_free>>;
using ExtKeyUsagePtr = std::unique_ptr<EXTENDED_KEY_USAGE, OpensslFree<EXTENDED_KEY_USAGE_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, OpensslFree<GENERAL_NAMES_free>>;
using BasicConstraintsPtr = std::unique_ptr<BASIC_CONSTRAINTS, OpensslFree<BASIC_CONSTRAINTS_free>>;
using Asn1ObjectPtr = std::unique_ptr<ASN1_OBJECT, OpensslFree<ASN1_OBJECT_free>>;
using Asn1OctetStringPtr = std::unique_ptr<ASN1_OCTET_STRING, OpensslFree<ASN1_OCTET_STRING_free>>;

// A stack of X509 that owns its certificates (sk_X509_pop_free).
struct X509StackFree {
  void operator()(STACK_OF(X509) * stack) const noexcept { sk_X509_pop_free(stack, X509_free); }
};
using X509StackPtr = std::unique_ptr<STACK_OF(X509), X509StackFree>;

using SharedX509 = std::shared_ptr<X509>;
using SharedPkey = std::shared_ptr<EVP_PKEY>;

}  // namespace kernelhub::trust::sigstore
