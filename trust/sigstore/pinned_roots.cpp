#include "trust/sigstore/pinned_roots.hpp"

namespace kernelhub::trust::sigstore {

Result<TrustedRoot> load_trusted_root_setting(std::string_view setting) {
  const std::string_view pinned = pinned_trusted_root_json(setting);
  if (!pinned.empty()) return parse_trusted_root(pinned);
  if (setting.empty()) return fail(ErrorCode::policy, "the trusted root setting is empty");
  return load_trusted_root(std::filesystem::path(setting));
}

}  // namespace kernelhub::trust::sigstore
