// The trust rule as a pure function: kernels-community is trusted, any other publisher needs
// DIFFUSERS_TRUST_REMOTE_KERNELS, and DIFFUSERS_DISABLE_REMOTE_CODE refuses everything.
// On a daemon the admin's policy bounds what a client's environment may opt into.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "kernelhub/trust/cache_settings.hpp"
#include "kernelhub/trust/signature_settings.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::trust {

inline constexpr std::string_view kTrustRemoteKernelsVar = "DIFFUSERS_TRUST_REMOTE_KERNELS";
inline constexpr std::string_view kDisableRemoteCodeVar = "DIFFUSERS_DISABLE_REMOTE_CODE";

// The two variables that matter, already parsed (true = 1/ON/YES/TRUE, any case).
struct TrustEnvironment {
  bool trust_remote_kernels = false;
  bool disable_remote_code = false;
  static TrustEnvironment from(const util::Environment& env);
};

// What the administrator allows. Org names compare exactly (case-sensitive): refusing a
// differently cased spelling is the safe failure.
// [daemon] bounds on kernelhubd's connections and downloads (docs/operations.md, "Limits"). An
// absent key keeps kernelhubd's flag or built-in default.
struct DaemonLimitSettings {
  std::optional<std::uint64_t> max_connections;          // clients served at once, in all
  std::optional<std::uint64_t> max_connections_per_uid;  // per uid (uid 0 exempt)
  std::optional<std::uint64_t> idle_timeout_s;   // no request for this long: connection closed
  std::optional<std::uint64_t> frame_timeout_s;  // hello and each request frame must arrive whole
  std::optional<std::uint64_t> max_downloads;    // flights running at once; more wait their turn
};

struct AdminPolicy {
  std::set<std::string> trusted_publishers{"kernels-community"};
  std::set<std::string> opt_in_publishers;
  bool allow_any_opt_in = true;  // false: only orgs in opt_in_publishers may be opted into
  bool disable_remote_code = false;
  // A Hub version branch vN may move to a commit that does not descend from the one
  // accepted before (a rollback or a force-push). Off: such a move is refused and the
  // accepted commit keeps being served.
  bool allow_version_rollback = false;
  // [daemon] who may connect to kernelhubd; names are resolved to ids when the policy is
  // loaded. Both absent: everyone may connect.
  std::optional<std::set<uid_t>> allow_users;
  std::optional<std::set<gid_t>> allow_groups;
  // [daemon] who may import bundles into the shared cache (besides root): nobody else unless
  // listed, since an import publishes for every user of the host.
  std::set<uid_t> import_users;
  std::set<gid_t> import_groups;
  DaemonLimitSettings limits;
  // [signatures]: Sigstore verification of each variant's metadata.json.
  SignatureSettings signatures;
  // [cache]: the bounds of the shared cache (kernelhub/trust/cache_settings.hpp).
  CacheSettings cache;
};

struct TrustDecision {
  bool allowed = false;
  ErrorCode code = ErrorCode::untrusted_publisher;  // meaningful only when !allowed
  std::string reason;                               // says why, names the org and the variable
};

TrustDecision decide_trust(const AdminPolicy& policy, std::string_view org,
                           const TrustEnvironment& env);

// May this peer (from SO_PEERCRED, never from a request) talk to the daemon? Root always
// may; otherwise the uid must be listed, or its primary or a supplementary group.
bool peer_allowed(const AdminPolicy& policy, uid_t uid, gid_t gid, std::span<const gid_t> groups);
// May this peer import a bundle into the daemon's cache? Root may; otherwise the uid, its
// primary or a supplementary group must be in import_users / import_groups.
bool peer_may_import(const AdminPolicy& policy, uid_t uid, gid_t gid,
                     std::span<const gid_t> groups);

// Reads an admin policy file (TOML):
//   [trust]
//   publishers = ["kernels-community", "my-org"]   # replaces the default trusted set
//   opt_in = ["SageAttention"]
//   allow_any_opt_in = false
//   disable_remote_code = false
//   allow_version_rollback = false   # true: follow a vN branch moved back or sideways
//   [daemon]
//   allow_users = ["alice", 1000]    # user names or numeric uids
//   allow_groups = ["kernelusers"]   # group names or numeric gids
//   import_users = ["ops"]           # who may `kernelhub bundle import` into the daemon's cache
//   import_groups = ["kernel-admins"]
//   max_connections = 256            # limits: positive integers, see DaemonLimitSettings
//   max_connections_per_uid = 32
//   idle_timeout_s = 120
//   frame_timeout_s = 10
//   max_downloads = 8
//   [cache]                          # see trust/cache_policy.cpp
//   max_size = "50GiB"
//   [signatures]                     # see trust/signature_policy.cpp
//   mode = "enforce"
// An unknown user or group name fails: a typo must not silently lock people out.
// Unknown keys/tables or wrong types fail with ErrorCode::policy.
Result<AdminPolicy> load_policy_file(const std::filesystem::path& path);
Result<AdminPolicy> parse_policy(std::string_view toml_text,
                                 std::string_view source_name = "policy");

}  // namespace kernelhub::trust
