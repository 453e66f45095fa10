// [signatures] of the admin policy:
//   [signatures]
//   mode = "enforce"                 # off | warn (default) | enforce
//   trusted_root = "production"      # production | staging | /path/to/trusted_root.json
//   [signatures.publishers.my-org]
//   issuer = "https://token.actions.githubusercontent.com"
//   source_repository = "https://github.com/my-org/kernels"
//   build_signers =
//   ["https://github.com/my-org/kernels/.github/workflows/release.yaml@refs/heads/main"] identities
//   = ["release-bot@my-org.example"]   # SANs, for non-CI signers
// A publisher entry replaces the built-in one of that org (kernels-community has one).
#include <algorithm>

#include "policy_toml.hpp"

namespace kernelhub::trust {
namespace {

Unexpected bad(const std::string& where, std::string what) {
  return fail(ErrorCode::policy, where + " " + std::move(what));
}

Result<std::string> string_value(const toml::node& node, const std::string& where) {
  const auto value = node.value<std::string>();
  if (!node.is_string() || !value || value->empty())
    return bad(where, "must be a non-empty string");
  return *value;
}

Result<std::vector<std::string>> string_list(const toml::node& node, const std::string& where) {
  const auto* array = node.as_array();
  if (array == nullptr) return bad(where, "must be an array of strings");
  std::vector<std::string> out;
  for (const auto& item : *array) {
    KH_TRY_ASSIGN(auto value, string_value(item, where));
    out.push_back(std::move(value));
  }
  return out;
}

Result<IdentityPolicy> parse_publisher(const toml::table& table, const std::string& where) {
  IdentityPolicy identity;
  identity.require_issuer_v2 = false;
  for (const auto& [name, value] : table) {
    const std::string key(name.str());
    std::string at = where;
    at += '.';
    at += key;
    if (key == "issuer") {
      KH_TRY_ASSIGN(identity.issuer, string_value(value, at));
    } else if (key == "source_repository") {
      KH_TRY_ASSIGN(identity.source_repository, string_value(value, at));
    } else if (key == "build_signers") {
      KH_TRY_ASSIGN(identity.build_signer_uris, string_list(value, at));
    } else if (key == "identities") {
      KH_TRY_ASSIGN(identity.sans, string_list(value, at));
    } else {
      return bad(where, "has an unknown key '" + key +
                            "' (allowed: issuer, source_repository, build_signers, identities)");
    }
  }
  // An issuer alone would accept anyone that issuer vouches for (every GitHub workflow).
  if (!identity.issuer) return bad(where, "needs an issuer");
  if (identity.build_signer_uris.empty() && identity.sans.empty()) {
    return bad(where,
               "needs build_signers or identities (an issuer alone admits anyone it serves)");
  }
  return identity;
}

Result<SignatureMode> parse_mode(const toml::node& node, const std::string& where) {
  KH_TRY_ASSIGN(const auto text, string_value(node, where));
  for (const SignatureMode mode :
       {SignatureMode::off, SignatureMode::warn, SignatureMode::enforce}) {
    if (text == to_string(mode)) return mode;
  }
  return bad(where, R"(must be "off", "warn" or "enforce", not ")" + text + "\"");
}

}  // namespace

IdentityPolicy kernels_community_policy() {
  IdentityPolicy policy;
  policy.issuer = "https://token.actions.githubusercontent.com";
  policy.require_issuer_v2 = true;
  policy.source_repository = "https://github.com/huggingface/kernels-community";
  for (const char* workflow : {"build", "build-mac", "build-windows", "sign-old-builds"}) {
    policy.build_signer_uris.push_back(
        std::string("https://github.com/huggingface/kernels-community/.github/workflows/") +
        workflow + ".yaml@refs/heads/main");
  }
  return policy;
}

std::string_view to_string(SignatureMode mode) noexcept {
  switch (mode) {
    case SignatureMode::off:
      return "off";
    case SignatureMode::warn:
      return "warn";
    case SignatureMode::enforce:
      return "enforce";
  }
  return "warn";
}

Result<void> parse_signatures_table(const toml::table& table, const std::string& source,
                                    SignatureSettings& settings) {
  const std::string where = source + ": [signatures]";
  for (const auto& [name, value] : table) {
    const std::string key(name.str());
    if (key == "mode") {
      KH_TRY_ASSIGN(settings.mode, parse_mode(value, where + " mode"));
    } else if (key == "trusted_root") {
      KH_TRY_ASSIGN(settings.trusted_root, string_value(value, where + " trusted_root"));
    } else if (key == "publishers") {
      const auto* publishers = value.as_table();
      if (publishers == nullptr) return bad(where + " publishers", "must be a table of orgs");
      for (const auto& [org, entry] : *publishers) {
        const std::string at = source + ": [signatures.publishers." + std::string(org.str()) + "]";
        const auto* table_of_org = entry.as_table();
        if (table_of_org == nullptr) return bad(at, "must be a table");
        KH_TRY_ASSIGN(auto identity, parse_publisher(*table_of_org, at));
        settings.publishers[std::string(org.str())] = std::move(identity);
      }
    } else {
      return bad(where,
                 "has an unknown key '" + key + "' (allowed: mode, trusted_root, publishers)");
    }
  }
  return {};
}

}  // namespace kernelhub::trust
