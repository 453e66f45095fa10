// The trusted roots compiled into kernelhub (cmake/SigstoreRoots.cmake), and the one way a
// trusted-root setting ("production", "staging" or a file path) is read.
#pragma once

#include <string>
#include <string_view>

#include "kernelhub/trust/sigstore/trusted_root.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust::sigstore {

// The pinned JSON of "production" or "staging"; empty for any other name.
std::string_view pinned_trusted_root_json(std::string_view name);

// The JSON a setting names: a pinned root, else the file at that path (at most 1 MiB read).
// ErrorCode::policy when it cannot be read.
Result<std::string> trusted_root_json(std::string_view setting);

// trusted_root_json, parsed. ErrorCode::policy when it is not a trusted root.
Result<TrustedRoot> load_trusted_root_setting(std::string_view setting);

}  // namespace kernelhub::trust::sigstore
