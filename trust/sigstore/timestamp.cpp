#include "timestamp.hpp"

#include <openssl/err.h>

#include "kernelhub/trust/sigstore/openssl_handles.hpp"

namespace kernelhub::trust::sigstore {
namespace {

Unexpected time_error(std::string message) {
  return fail(ErrorCode::signature_invalid, "time: " + std::move(message));
}

// One authority's verdict: OpenSSL checks the status, the version, the CMS signature by a
// certificate with the critical timeStamping usage, its ESS binding, and the imprint of
// `signed_bytes`; the chain is checked at the timestamp's own time.
bool verified_by(TS_RESP* response, std::string_view signed_bytes,
                 const CertificateAuthority& authority, UnixSeconds gen_time) {
  if (authority.chain.size() < 2 || !authority.valid_for.contains(gen_time)) return false;
  X509StorePtr store(X509_STORE_new());
  X509StackPtr certs(sk_X509_new_null());
  BioPtr data(BIO_new_mem_buf(signed_bytes.data(), static_cast<int>(signed_bytes.size())));
  TsVerifyCtxPtr ctx(TS_VERIFY_CTX_new());
  if (!store || !certs || !data || !ctx) return false;
  if (X509_STORE_add_cert(store.get(), authority.chain.back().get()) != 1) return false;
  X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store.get()), static_cast<time_t>(gen_time));
  for (std::size_t i = 0; i + 1 < authority.chain.size(); ++i) {
    X509* cert = authority.chain[i].get();
    if (X509_up_ref(cert) != 1) return false;
    if (sk_X509_push(certs.get(), cert) <= 0) {
      X509_free(cert);
      return false;
    }
  }
  TS_VERIFY_CTX_set_flags(ctx.get(), TS_VFY_VERSION | TS_VFY_SIGNATURE | TS_VFY_DATA);
  // The context owns what it is given from here on.
  TS_VERIFY_CTX_set_data(ctx.get(), data.release());
  TS_VERIFY_CTX_set_store(ctx.get(), store.release());
  TS_VERIFY_CTX_set_certs(ctx.get(), certs.release());
  const bool ok = TS_RESP_verify_response(ctx.get(), response) == 1;
  ERR_clear_error();
  return ok;
}

struct Decoded {
  TsRespPtr response;
  UnixSeconds gen_time = 0;
};

// The whole of `response_der` as one TimeStampResp whose token has a readable genTime, or
// why not (without the "time: " prefix).
Result<Decoded> decode(std::string_view response_der) {
  const auto* cursor = reinterpret_cast<const unsigned char*>(response_der.data());
  TsRespPtr response(d2i_TS_RESP(nullptr, &cursor, static_cast<long>(response_der.size())));
  if (!response ||
      cursor != reinterpret_cast<const unsigned char*>(response_der.data()) + response_der.size()) {
    ERR_clear_error();
    return fail(ErrorCode::signature_invalid, "not a DER TimeStampResp");
  }
  TS_TST_INFO* info = TS_RESP_get_tst_info(response.get());
  const auto gen_time =
      info == nullptr ? std::nullopt : asn1_time_seconds(TS_TST_INFO_get_time(info));
  if (!gen_time)
    return fail(ErrorCode::signature_invalid, "no timestamp token with a readable time");
  return Decoded{std::move(response), *gen_time};
}

}  // namespace

Result<void> check_rfc3161_decodes(std::string_view response_der) {
  KH_TRY(decode(response_der));
  return {};
}

Result<UnixSeconds> verify_rfc3161(std::string_view response_der, std::string_view signed_bytes,
                                   std::span<const CertificateAuthority> authorities) {
  auto decoded = decode(response_der);
  if (!decoded) return time_error("a signed timestamp is " + decoded.error().message);
  for (const CertificateAuthority& authority : authorities) {
    if (verified_by(decoded->response.get(), signed_bytes, authority, decoded->gen_time)) {
      return decoded->gen_time;
    }
  }
  return time_error("a signed timestamp is not by a timestamp authority of the trusted root");
}

}  // namespace kernelhub::trust::sigstore
