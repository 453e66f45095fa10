#include "kernelhub/trust/policy.hpp"

#include <grp.h>
#include <pwd.h>

#include <toml++/toml.h>

#include <algorithm>
#include <array>
#include <sstream>
#include <vector>

#include "kernelhub/util/read_file.hpp"
#include "kernelhub/util/toml_bounds.hpp"
#include "policy_toml.hpp"

namespace kernelhub::trust {

TrustEnvironment TrustEnvironment::from(const util::Environment& env) {
  return TrustEnvironment{env.is_true(kTrustRemoteKernelsVar), env.is_true(kDisableRemoteCodeVar)};
}

TrustDecision decide_trust(const AdminPolicy& policy, std::string_view org,
                           const TrustEnvironment& env) {
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
            "kernels from " +
                quoted + " cannot be loaded on this host"};
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
            "publisher " + quoted +
                " is not trusted and the administrator's policy does not allow opting into it: " +
                std::string(kTrustRemoteKernelsVar) + " is ignored for " + quoted +
                " (ask the admin to add it to [trust] opt_in)"};
  }
  return {true, ErrorCode::untrusted_publisher,
          "publisher " + quoted + " allowed by " + std::string(kTrustRemoteKernelsVar)};
}

namespace {

Result<std::set<std::string>> string_set(const toml::node& node, std::string_view source,
                                         std::string_view key) {
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

// getpwnam_r/getgrnam_r with a growing buffer; nullopt when the name does not exist.
std::optional<std::uint32_t> lookup_id(const std::string& name, bool user) {
  std::vector<char> buffer(1024);
  for (;;) {
    int rc = 0;
    std::optional<std::uint32_t> id;
    if (user) {
      passwd pw{};
      passwd* found = nullptr;
      rc = ::getpwnam_r(name.c_str(), &pw, buffer.data(), buffer.size(), &found);
      if (rc == 0 && found != nullptr) id = found->pw_uid;
    } else {
      group gr{};
      group* found = nullptr;
      rc = ::getgrnam_r(name.c_str(), &gr, buffer.data(), buffer.size(), &found);
      if (rc == 0 && found != nullptr) id = found->gr_gid;
    }
    if (rc != ERANGE || buffer.size() > (1u << 20)) return id;
    buffer.resize(buffer.size() * 2);
  }
}

// allow_users / allow_groups: names (resolved now) or non-negative integer ids.
Result<std::set<std::uint32_t>> id_set(const toml::node& node, const std::string& source,
                                       std::string_view key, bool user) {
  const std::string where = source + ": [daemon] " + std::string(key);
  const auto* array = node.as_array();
  if (array == nullptr)
    return fail(ErrorCode::policy, where + " must be an array of names or numeric ids");
  std::set<std::uint32_t> out;
  for (const auto& item : *array) {
    if (const auto number = item.value<std::int64_t>(); item.is_integer() && number) {
      if (*number < 0 || *number > 0xfffffffe)
        return fail(ErrorCode::policy, where + ": id out of range");
      out.insert(static_cast<std::uint32_t>(*number));
      continue;
    }
    const auto name = item.value<std::string>();
    if (!item.is_string() || !name || name->empty()) {
      return fail(ErrorCode::policy, where + " must contain only names or numeric ids");
    }
    const auto id = lookup_id(*name, user);
    if (!id)
      return fail(ErrorCode::policy,
                  where + ": no " + (user ? "user" : "group") + " named '" + *name + "'");
    out.insert(*id);
  }
  return out;
}

// The [daemon] limit keys with their accepted ranges; nullptr when `key` is not one.
std::optional<std::uint64_t>* limit_slot(DaemonLimitSettings& limits, std::string_view key,
                                         std::uint64_t& max) {
  struct Key {
    std::string_view key;
    std::optional<std::uint64_t> DaemonLimitSettings::*slot;
    std::uint64_t max;
  };
  const std::array<Key, 5> keys{{
      {"max_connections", &DaemonLimitSettings::max_connections, 65536},
      {"max_connections_per_uid", &DaemonLimitSettings::max_connections_per_uid, 65536},
      {"idle_timeout_s", &DaemonLimitSettings::idle_timeout_s, 86400},
      {"frame_timeout_s", &DaemonLimitSettings::frame_timeout_s, 3600},
      {"max_downloads", &DaemonLimitSettings::max_downloads, 1024},
  }};
  for (const auto& k : keys) {
    if (k.key == key) {
      max = k.max;
      return &(limits.*k.slot);
    }
  }
  return nullptr;
}

Result<void> parse_daemon_table(const toml::table& table, const std::string& source,
                                AdminPolicy& policy) {
  for (const auto& [name, value] : table) {
    const std::string_view k = name.str();
    std::uint64_t max = 0;
    if (auto* slot = limit_slot(policy.limits, k, max)) {
      const auto number = value.value<std::int64_t>();
      if (!value.is_integer() || !number || *number < 1 ||
          static_cast<std::uint64_t>(*number) > max) {
        return fail(ErrorCode::policy, source + ": [daemon] " + std::string(k) +
                                           " must be an integer from 1 to " + std::to_string(max));
      }
      *slot = static_cast<std::uint64_t>(*number);
      continue;
    }
    if (k != "allow_users" && k != "allow_groups" && k != "import_users" && k != "import_groups") {
      return fail(ErrorCode::policy,
                  source + ": unknown key '" + std::string(k) +
                      "' in [daemon] (allowed: allow_users, allow_groups, import_users, "
                      "import_groups, max_connections, max_connections_per_uid, "
                      "idle_timeout_s, frame_timeout_s, max_downloads)");
    }
    const bool user = k.ends_with("_users");
    KH_TRY_ASSIGN(auto ids, id_set(value, source, k, user));
    if (k == "allow_users") {
      policy.allow_users = std::set<uid_t>(ids.begin(), ids.end());
    } else if (k == "allow_groups") {
      policy.allow_groups = std::set<gid_t>(ids.begin(), ids.end());
    } else if (k == "import_users") {
      policy.import_users = std::set<uid_t>(ids.begin(), ids.end());
    } else {
      policy.import_groups = std::set<gid_t>(ids.begin(), ids.end());
    }
  }
  return ok();
}

}  // namespace

bool peer_allowed(const AdminPolicy& policy, uid_t uid, gid_t gid, std::span<const gid_t> groups) {
  if (!policy.allow_users && !policy.allow_groups) return true;
  if (uid == 0) return true;
  if (policy.allow_users && policy.allow_users->contains(uid)) return true;
  if (!policy.allow_groups) return false;
  if (policy.allow_groups->contains(gid)) return true;
  return std::any_of(groups.begin(), groups.end(),
                     [&](gid_t g) { return policy.allow_groups->contains(g); });
}

bool peer_may_import(const AdminPolicy& policy, uid_t uid, gid_t gid,
                     std::span<const gid_t> groups) {
  if (uid == 0 || policy.import_users.contains(uid) || policy.import_groups.contains(gid)) {
    return true;
  }
  return std::any_of(groups.begin(), groups.end(),
                     [&](gid_t g) { return policy.import_groups.contains(g); });
}

Result<AdminPolicy> parse_policy(std::string_view toml_text, std::string_view source_name) {
  const std::string source(source_name);
  if (auto bounded = util::check_toml_shape(toml_text, util::kPolicyToml, ErrorCode::policy);
      !bounded)
    return fail(ErrorCode::policy, source + ": " + bounded.error().message);
  // The Debian build of toml++ reports parse errors by exception; keep them inside.
  toml::table root;
  try {
    root = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << source << ": invalid TOML: " << e.description() << " (line " << e.source().begin.line
        << ")";
    return fail(ErrorCode::policy, msg.str());
  }
  AdminPolicy policy;
  for (const auto& [key, node] : root) {
    if (key.str() == "daemon") {
      const auto* daemon = node.as_table();
      if (daemon == nullptr) return fail(ErrorCode::policy, source + ": 'daemon' must be a table");
      KH_TRY(parse_daemon_table(*daemon, source, policy));
      continue;
    }
    if (key.str() == "cache") {
      const auto* cache = node.as_table();
      if (cache == nullptr) return fail(ErrorCode::policy, source + ": 'cache' must be a table");
      KH_TRY(parse_cache_table(*cache, source, policy.cache));
      continue;
    }
    if (key.str() == "signatures") {
      const auto* signatures = node.as_table();
      if (signatures == nullptr) {
        return fail(ErrorCode::policy, source + ": 'signatures' must be a table");
      }
      KH_TRY(parse_signatures_table(*signatures, source, policy.signatures));
      continue;
    }
    if (key.str() != "trust") {
      return fail(ErrorCode::policy,
                  source + ": unknown table or key '" + std::string(key.str()) +
                      "' (only [trust], [daemon], [cache] and [signatures] are allowed)");
    }
    const auto* trust = node.as_table();
    if (trust == nullptr) return fail(ErrorCode::policy, source + ": 'trust' must be a table");
    for (const auto& [name, value] : *trust) {
      const std::string_view k = name.str();
      if (k == "publishers") {
        KH_TRY_ASSIGN(policy.trusted_publishers, string_set(value, source, k));
      } else if (k == "opt_in") {
        KH_TRY_ASSIGN(policy.opt_in_publishers, string_set(value, source, k));
      } else if (k == "allow_any_opt_in") {
        KH_TRY_ASSIGN(policy.allow_any_opt_in, boolean(value, source, k));
      } else if (k == "disable_remote_code") {
        KH_TRY_ASSIGN(policy.disable_remote_code, boolean(value, source, k));
      } else if (k == "allow_version_rollback") {
        KH_TRY_ASSIGN(policy.allow_version_rollback, boolean(value, source, k));
      } else {
        return fail(ErrorCode::policy,
                    source + ": unknown key '" + std::string(k) +
                        "' in [trust] (allowed: publishers, opt_in, allow_any_opt_in, "
                        "disable_remote_code, allow_version_rollback)");
      }
    }
  }
  return policy;
}

Result<AdminPolicy> load_policy_file(const std::filesystem::path& path) {
  auto text = util::read_small_file(path, util::kPolicyToml.max_bytes);
  if (!text) return fail(ErrorCode::policy, "cannot read the policy file: " + text.error().message);
  return parse_policy(*text, path.string());
}

}  // namespace kernelhub::trust
