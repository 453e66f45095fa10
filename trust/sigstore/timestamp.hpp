// RFC 3161 signed timestamps (the verified time of Rekor v2 entries): a granted
// TimeStampResp over the bundle's signature bytes, signed by a timestamp authority of the
// trusted root whose chain holds at the stated time, within the authority's validFor.
#pragma once

#include <span>
#include <string_view>

#include "kernelhub/trust/sigstore/sigstore_time.hpp"
#include "kernelhub/trust/sigstore/trusted_root.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust::sigstore {

// Whether `response_der` decodes: one DER TimeStampResp whose token has a readable genTime.
// The bundle parser refuses a bundle with a timestamp that does not (as sigstore-python
// does), even when another source of time would hold; one that decodes but no trusted
// authority signed is only not counted (verify_rfc3161). signature_invalid saying why.
Result<void> check_rfc3161_decodes(std::string_view response_der);

// The timestamp's genTime, or signature_invalid "time: ..." naming why no authority
// accepted it.
Result<UnixSeconds> verify_rfc3161(std::string_view response_der, std::string_view signed_bytes,
                                   std::span<const CertificateAuthority> authorities);

}  // namespace kernelhub::trust::sigstore
