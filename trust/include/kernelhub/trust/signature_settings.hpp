// What the admin policy says about Sigstore signatures ([signatures] in the policy file):
// the mode, the trusted root, and which signer identity each publisher's kernels must carry.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kernelhub::trust {

// Who may sign a publisher's kernels, checked on the Fulcio certificate: the OIDC issuer
// (extension .1.1, and .1.8 when present), the source repository URI (.1.12), one of the
// build signer URIs (.1.9) and one of the SANs (a workflow URI or an e-mail). Each part is
// checked when set; an empty list checks nothing.
struct IdentityPolicy {
  std::optional<std::string> issuer;
  bool require_issuer_v2 = false;  // .1.8 must be present (kernels' policy)
  std::optional<std::string> source_repository;
  std::vector<std::string> build_signer_uris;
  std::vector<std::string> sans;
};

// The policy `kernels` applies to kernels-community: GitHub Actions OIDC, the
// kernels-community repository, and its four release workflows on main.
IdentityPolicy kernels_community_policy();

enum class SignatureMode {
  off,      // signatures are neither read nor checked
  warn,     // checked; an unsigned or failing variant is served with a warning
  enforce,  // checked; an unsigned or failing variant is refused
};

std::string_view to_string(SignatureMode mode) noexcept;

struct SignatureSettings {
  // warn by default: kernels-community signs its releases, but older builds, PR builds and
  // every other publisher are unsigned today, and `kernels` itself only warns; an admin who
  // only serves signed kernels turns on enforce (docs/security.md, "Signed kernels").
  SignatureMode mode = SignatureMode::warn;
  // "production" or "staging" (the roots compiled in), or a trusted_root.json path.
  std::string trusted_root = "production";
  // Per publisher (org); an org without an entry cannot pass enforce.
  std::map<std::string, IdentityPolicy> publishers{
      {"kernels-community", kernels_community_policy()}};
};

}  // namespace kernelhub::trust
