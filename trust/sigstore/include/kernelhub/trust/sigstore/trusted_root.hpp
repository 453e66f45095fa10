// The Sigstore trust material (`trusted_root.json`, media type
// application/vnd.dev.sigstore.trustedroot+json;version=0.1): the Fulcio CAs, the Rekor and
// CT log keys and the timestamp authorities a bundle is verified against. It is read from a
// file the admin pins; nothing is fetched at verify time.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "kernelhub/trust/sigstore/openssl_handles.hpp"
#include "kernelhub/trust/sigstore/public_key.hpp"
#include "kernelhub/trust/sigstore/sigstore_time.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust::sigstore {

// A CA (Fulcio or a TSA): its chain as the trusted root lists it, issuing certificate first
// and root last.
struct CertificateAuthority {
  std::vector<SharedX509> chain;
  TimeRange valid_for;
};

// Sigstore's production root is ~7 KiB; an admin's own root is of the same kind.
inline constexpr std::size_t kMaxTrustedRootBytes = 1u << 20;

struct TrustedRoot {
  std::vector<LogKey> tlogs;
  std::vector<LogKey> ctlogs;
  std::vector<CertificateAuthority> certificate_authorities;
  std::vector<CertificateAuthority> timestamp_authorities;
};

// ErrorCode::policy naming what is wrong ("trusted root: tlogs[1].publicKey.rawBytes is not
// base64"). Keys of unknown types are skipped; a root without a Fulcio CA, a Rekor key or
// a CT key is refused (nothing could pass against it).
// Read a setting or a file with load_trusted_root_setting (pinned_roots.hpp).
Result<TrustedRoot> parse_trusted_root(std::string_view json);

}  // namespace kernelhub::trust::sigstore
