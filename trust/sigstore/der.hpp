// The one DER edit the verifier needs, done on the bytes: RFC 6962 signs a precertificate
// whose TBSCertificate lacks the SCT list, and rebuilding that through OpenSSL (duplicate,
// delete the extension, re-encode) runs its key decoders again on every verification. The
// certificate was already parsed and its signature checked by OpenSSL; this only walks its
// definite-length DER.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kernelhub::trust::sigstore {

// The TBSCertificate of `certificate_der` with the extension whose OID (DER, tag and length
// included) is `extension_oid` left out, lengths adjusted; nullopt when the certificate is
// not well-formed DER or has no such extension.
std::optional<std::string> tbs_without_extension(std::string_view certificate_der,
                                                 std::string_view extension_oid);

}  // namespace kernelhub::trust::sigstore
