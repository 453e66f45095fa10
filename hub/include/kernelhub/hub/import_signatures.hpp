// [signatures] for a bundle import: each variant arriving without a fetch is verified as a
// download is (SignatureVerifier, before its metadata.json is parsed) and judged by the
// policy in force for the vN the bundle claims, so enforce refuses an unsigned or failing
// variant before anything is published, and warn imports it with a warning.
#pragma once

#include "kernelhub/cache/bundle/bundle_import.hpp"
#include "kernelhub/trust/signature_settings.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub {

// The importer's check for `settings`: empty when the mode is off; ErrorCode::policy when the
// trusted root cannot be loaded.
Result<cache::bundle::SignatureCheck> import_signature_check(
    const trust::SignatureSettings& settings);

}  // namespace kernelhub::hub
