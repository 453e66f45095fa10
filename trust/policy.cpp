#include "trust/policy.hpp"

#include <toml++/toml.h>

#include <fstream>
#include <sstream>

namespace kernelhub::trust {

TrustEnvironment TrustEnvironment::from(const Environment& env) {
  return TrustEnvironment{env.is_true(kTrustRemoteKernelsVar), env.is_true(kDisableRemoteCodeVar)};
}

TrustDecision decide_trust(const AdminPolicy& policy, std::string_view org, const TrustEnvironment& env) {
  const std::string quoted = "'" + std::string(org) + "'";
  // Disable wins over everything, kernels-community included.
  if (env.disable_remote_code) {
    return {false, ErrorCode::remote_code_disabled,
            "remote kernels are disabled by " + std::string(kDisableRemoteCodeVar) +
                ": unset it to load kernels from " + quoted};
  }
  if (policy.disable_remote_code) {
    return {false, ErrorCode::remote_code_disabled,
            "remote kernels are disabled by the administrator's policy (disable_remote_code): "
            "kernels from " + quoted + " cannot be loaded on this host"};
  }
  if (policy.trusted_publishers.contains(std::string(org))) {
    return {true, ErrorCode::untrusted_publisher, "publisher " + quoted + " is trusted"};
  }
  if (!env.trust_remote_kernels) {
    return {false, ErrorCode::untrusted_publisher,
            "publisher " + quoted + " is not trusted: set " + std::string(kTrustRemoteKernelsVar) +
                "=1 to allow kernels from publishers other than kernels-community"};
  }
  // A client's opt-in never widens trust past what the admin allows.
  if (!policy.allow_any_opt_in && !policy.opt_in_publishers.contains(std::string(org))) {
    return {false, ErrorCode::untrusted_publisher,
            "publisher " + quoted + " is not trusted and the administrator's policy does not allow opting into it: " +
                std::string(kTrustRemoteKernelsVar) + " is ignored for " + quoted +
                " (ask the admin to add it to [trust] opt_in)"};
  }
  return {true, ErrorCode::untrusted_publisher,
          "publisher " + quoted + " allowed by " + std::string(kTrustRemoteKernelsVar)};
}

namespace {

Result<std::set<std::string>> string_set(const toml::node& node, std::string_view source, std::string_view key) {
  const auto* array = node.as_array();
  if (array == nullptr) {
    return fail(ErrorCode::policy, std::string(source) + ": [trust] " + std::string(key) +
                                       " must be an array of strings");
  }
  std::set<std::string> out;
  for (const auto& item : *array) {
    const auto value = item.value<std::string>();
    if (!item.is_string() || !value || value->empty()) {
      return fail(ErrorCode::policy, std::string(source) + ": [trust] " + std::string(key) +
                                         " must contain only non-empty strings");
    }
    out.insert(*value);
  }
  return out;
}

Result<bool> boolean(const toml::node& node, std::string_view source, std::string_view key) {
  if (!node.is_boolean()) {
    return fail(ErrorCode::policy,
                std::string(source) + ": [trust] " + std::string(key) + " must be true or false");
  }
  return *node.value<bool>();
}

}  // namespace

Result<AdminPolicy> parse_policy(std::string_view toml_text, std::string_view source_name) {
  const std::string source(source_name);
  // The Debian build of toml++ reports parse errors by exception; keep them inside.
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << source << ": invalid TOML: " << e.description() << " (line " << e.source().begin.line << ")";
    return fail(ErrorCode::policy, msg.str());
  }
  AdminPolicy policy;
  for (const auto& [key, node] : root) {
    if (key.str() != "trust") {
      return fail(ErrorCode::policy, source + ": unknown table or key '" + std::string(key.str()) +
                                         "' (only [trust] is allowed)");
    }
    const auto* trust = node.as_table();
    if (trust == nullptr) return fail(ErrorCode::policy, source + ": 'trust' must be a table");
    for (const auto& [name, value] : *trust) {
      const std::string_view k = name.str();
      if (k == "publishers") {
        auto set = string_set(value, source, k);
        KH_TRY(set);
        policy.trusted_publishers = std::move(*set);
      } else if (k == "opt_in") {
        auto set = string_set(value, source, k);
        KH_TRY(set);
        policy.opt_in_publishers = std::move(*set);
      } else if (k == "allow_any_opt_in") {
        auto b = boolean(value, source, k);
        KH_TRY(b);
        policy.allow_any_opt_in = *b;
      } else if (k == "disable_remote_code") {
        auto b = boolean(value, source, k);
        KH_TRY(b);
        policy.disable_remote_code = *b;
      } else {
        return fail(ErrorCode::policy,
                    source + ": unknown key '" + std::string(k) +
                        "' in [trust] (allowed: publishers, opt_in, allow_any_opt_in, disable_remote_code)");
      }
    }
  }
  return policy;
}

Result<AdminPolicy> load_policy_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::policy, "cannot read policy file " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return fail(ErrorCode::policy, "cannot read policy file " + path.string());
  return parse_policy(text.str(), path.string());
}

}  // namespace kernelhub::trust
