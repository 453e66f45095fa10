// The trusted roots compiled into kernelhub (cmake/SigstoreRoots.cmake), and the one way a
// trusted-root setting ("production", "staging" or a file path) becomes a TrustedRoot.
#pragma once

#include <string_view>

#include "trust/result.hpp"
#include "trust/sigstore/trusted_root.hpp"

namespace kernelhub::trust::sigstore {

// The pinned JSON of "production" or "staging"; empty for any other name.
std::string_view pinned_trusted_root_json(std::string_view name);

// "production" and "staging" are the pinned roots; anything else is a path to a
// trusted_root.json. ErrorCode::policy when it cannot be read or is not a trusted root.
Result<TrustedRoot> load_trusted_root_setting(std::string_view setting);

}  // namespace kernelhub::trust::sigstore
