#include "kernelhub/trust/sigstore/pinned_roots.hpp"

#include "kernelhub/util/read_file.hpp"

namespace kernelhub::trust::sigstore {

Result<std::string> trusted_root_json(std::string_view setting) {
  const std::string_view pinned = pinned_trusted_root_json(setting);
  if (!pinned.empty()) return std::string(pinned);
  if (setting.empty()) return fail(ErrorCode::policy, "the trusted root setting is empty");
  auto text = util::read_small_file(std::filesystem::path(setting), kMaxTrustedRootBytes);
  if (!text)
    return fail(ErrorCode::policy, "cannot read the trusted root: " + text.error().message);
  return std::move(*text);
}

Result<TrustedRoot> load_trusted_root_setting(std::string_view setting) {
  KH_TRY_ASSIGN(auto text, trusted_root_json(setting));
  auto root = parse_trusted_root(text);
  if (!root) return fail(ErrorCode::policy, std::string(setting) + ": " + root.error().message);
  return root;
}

}  // namespace kernelhub::trust::sigstore
