// Times in the Sigstore verifier are Unix seconds (UTC): what Rekor's integratedTime is,
// what an RFC 3161 genTime and an X.509 validity reduce to, and what the trusted root's
// RFC 3339 `validFor` bounds are parsed into.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <openssl/asn1.h>

namespace kernelhub::trust::sigstore {

using UnixSeconds = std::int64_t;

// "2021-03-07T03:20:29Z", with optional fractional seconds and a numeric offset; nullopt
// for anything else.
std::optional<UnixSeconds> parse_rfc3339(std::string_view text);

// nullopt when the ASN.1 time does not convert (a malformed certificate field).
std::optional<UnixSeconds> asn1_time_seconds(const ASN1_TIME* time);

// A validity window; a missing end means open-ended.
struct TimeRange {
  UnixSeconds start = 0;
  std::optional<UnixSeconds> end;

  bool contains(UnixSeconds t) const noexcept { return t >= start && (!end || t <= *end); }
};

}  // namespace kernelhub::trust::sigstore
