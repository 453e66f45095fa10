// Typed frames of the kernelhubd protocol, one struct per message in docs/protocol.md, with
// strict parsing (missing members or wrong types are invalid_request, an unknown `type` is
// unknown_request) and canonical serialisation: to_json omits absent optionals, so
// to_json(parse(x)) == x for every canonical x (tests/proto/golden/ holds one per type).
// Unknown extra members are ignored, so a newer peer can add fields without a version bump.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelhub/fetch/manifest.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::proto {

inline constexpr int kProtocolVersion = 1;
inline constexpr std::string_view kCapabilityFds = "fds";
inline constexpr std::string_view kCapabilityProgress = "progress";

using RequestId = std::uint64_t;

// Both directions: the client names itself in `client`, the daemon in `daemon`.
struct Hello {
  int protocol = kProtocolVersion;
  std::vector<std::string> capabilities;
  std::optional<std::string> client;
  std::optional<std::string> daemon;
  bool operator==(const Hello&) const = default;
};

// `fetch` or `prefetch`. Exactly one of version/revision. Only the keys the daemon reads are
// meaningful in env (DIFFUSERS_TRUST_REMOTE_KERNELS, DIFFUSERS_DISABLE_REMOTE_CODE,
// HF_HUB_OFFLINE).
struct FetchRequest {
  bool prefetch = false;
  RequestId id = 0;
  std::string repo;  // org/name, validated by the daemon with trust::RepoId::parse
  std::optional<std::uint64_t> version;
  std::optional<std::string> revision;
  std::optional<std::string> variant;
  bool all_variants = false;
  // What the client runs against, as the client detected it; the daemon selects the variant
  // for this and never for its own environment. Absent (older clients): unknown.
  std::optional<std::string> torch_version;  // "2.15" (or "2.15.0+cu132" from older clients)
  std::optional<std::string> backend;        // "cpu", "cu132", "rocm71", ...
  std::optional<bool> cxx11_abi;
  std::optional<std::string> arch;  // "x86_64", "aarch64"
  std::optional<std::string> os;    // "linux", "darwin", "windows"
  std::map<std::string, std::string> env;
  // Present when the request comes from a kernels.lock entry (`revision` is then the locked
  // commit): variant -> legacy git_lfs_concat hash, empty for the kernels format. The daemon
  // hands out only that commit, and each variant only if its hash matches.
  std::optional<std::map<std::string, std::string>> locked;
  bool operator==(const FetchRequest&) const = default;
};

struct Progress {
  RequestId id = 0;
  std::string file;
  std::uint64_t bytes_done = 0;
  std::uint64_t bytes_total = 0;
  std::uint64_t files_done = 0;
  std::uint64_t files_total = 0;
  bool operator==(const Progress&) const = default;
};

// The answer to a fetch: what was served. With `with_fds` each file comes with a descriptor,
// files[i]'s being the frame's SCM_RIGHTS fd i (on the wire: "fd": i). The manifest's etags
// stay in kernelhubd.
struct Fetched {
  RequestId id = 0;
  fetch::Manifest manifest;
  bool with_fds = false;
  bool operator==(const Fetched&) const = default;
};

struct StatusRequest {
  RequestId id = 0;
  bool operator==(const StatusRequest&) const = default;
};

struct Counters {
  std::uint64_t requests = 0;
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t bytes_downloaded = 0;
  std::uint64_t upstream_requests = 0;
  std::uint64_t errors = 0;
  std::uint64_t connections = 0;
  std::uint64_t active_connections = 0;
  // vN moves refused by the rollback guard (absent from daemons before it: 0).
  std::uint64_t rollbacks_refused = 0;
  // [signatures]: hand-outs refused (enforce) and served with a warning (warn); absent
  // from daemons before signatures: 0.
  std::uint64_t signatures_refused = 0;
  std::uint64_t signatures_warned = 0;
  // The fields below are absent from daemons before the metrics (0 / empty).
  std::uint64_t trust_refused = 0;   // fetches refused by the trust rule
  std::uint64_t http_requests = 0;   // requests on the --http listener (the local Hub)
  std::uint64_t flights = 0;         // downloads started upstream (single-flight leaders)
  std::uint64_t flights_active = 0;  // of those, running or waiting for a turn now
  // Errors answered to clients, by their `code` name (snake_case, at most kMaxErrorClasses).
  std::map<std::string, std::uint64_t> errors_by_class;
  // Flight durations: count per bucket of kFlightSecondsBounds, plus one for +Inf (so
  // kFlightSecondsBounds.size() + 1 entries, or none), and their sum.
  std::vector<std::uint64_t> flight_seconds_buckets;
  double flight_seconds_sum = 0;
  // The cache (absent from daemons before eviction: 0): variants evicted and their blob
  // bytes (counters); the blobs' bytes, the file system's free bytes and the pinned
  // variants' bytes (gauges, as of the daemon's last look).
  std::uint64_t evictions = 0;
  std::uint64_t evicted_bytes = 0;
  std::uint64_t cache_bytes = 0;
  std::uint64_t cache_free_bytes = 0;
  std::uint64_t cache_pinned_bytes = 0;
  bool operator==(const Counters&) const = default;
};

inline constexpr std::size_t kMaxErrorClasses = 128;
// Upper bounds (seconds) of the flight-duration histogram buckets.
inline constexpr std::array<double, 12> kFlightSecondsBounds{0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                             0.5,   1,    2.5,   5,    10,  30};

struct StatusReply {
  RequestId id = 0;
  std::string daemon;
  std::int64_t pid = 0;
  double uptime_s = 0;
  std::string cache_root;
  int protocol = kProtocolVersion;
  Counters counters;
  bool operator==(const StatusReply&) const = default;
};

struct LsRequest {
  RequestId id = 0;
  bool operator==(const LsRequest&) const = default;
};

// `repos` has the shape of `kernelhub ls --json`; checked to be an array, passed through.
struct LsReply {
  RequestId id = 0;
  nlohmann::json repos = nlohmann::json::array();
  bool operator==(const LsReply&) const = default;
};

struct VerifyRequest {
  RequestId id = 0;
  std::optional<std::string> repo;  // all cached repos when absent
  bool operator==(const VerifyRequest&) const = default;
};

struct CorruptBlob {
  std::string repo;
  std::string blob;
  std::string reason;
  bool operator==(const CorruptBlob&) const = default;
};

struct VerifyReply {  // type `verified`
  RequestId id = 0;
  std::uint64_t checked = 0;
  std::vector<CorruptBlob> corrupt;
  // Signature receipts verified again from the cache, and those that disagreed (rewritten);
  // absent from daemons before signatures.
  std::uint64_t receipts_checked = 0;
  std::vector<std::string> receipts_changed;
  bool operator==(const VerifyReply&) const = default;
};

// `gc`: snapshots no ref names go; with any bound, the least recently used variants until
// the cache is within it (the daemon's [cache] policy where the request names none). A
// request with a bound may come only from a peer that may import (it removes kernels others
// use); `dry_run` may come from anyone.
struct GcRequest {
  RequestId id = 0;
  std::optional<std::uint64_t> max_size;
  std::optional<std::uint64_t> min_free_bytes;
  std::optional<double> min_free_percent;  // 0 <= p < 100
  std::optional<std::uint64_t> max_unused_age_s;
  bool dry_run = false;
  bool has_bounds() const {
    return max_size || min_free_bytes || min_free_percent || max_unused_age_s;
  }
  bool operator==(const GcRequest&) const = default;
};

// The members after freed_bytes are absent from daemons before eviction (then 0 / empty /
// true). `evicted`: {repo, commit, variant, size_bytes, last_used, reason} objects, checked to
// be an array and passed through (cache::eviction_report_json makes them).
struct GcReply {
  RequestId id = 0;
  std::uint64_t removed_snapshots = 0;
  std::uint64_t removed_blobs = 0;
  std::uint64_t freed_bytes = 0;
  nlohmann::json evicted = nlohmann::json::array();
  std::uint64_t cache_bytes = 0;
  std::uint64_t pinned_bytes = 0;
  std::uint64_t free_bytes = 0;
  std::vector<std::string> skipped;
  bool within_bounds = true;
  bool dry_run = false;
  bool operator==(const GcReply&) const = default;
};

// `pin`: action "add" (repo, revision: a commit or a ref of the daemon's cache, variants:
// none for all, source: what asked), "remove" (repo, revision optional: every pin of the
// repo without), or "list". add and remove follow the import rule; list is open.
struct PinRequest {
  RequestId id = 0;
  std::string action;
  std::optional<std::string> repo;
  std::optional<std::string> revision;
  std::vector<std::string> variants;
  std::string source;
  bool operator==(const PinRequest&) const = default;
};

// `pins`: the repos with pins after the request ({repo, pins: [{commit, variants, source,
// pinned_by, pinned_at, size_bytes, cached}]}), checked to be an array and passed through;
// `removed`: how many pins a remove took away.
struct PinReply {
  RequestId id = 0;
  nlohmann::json repos = nlohmann::json::array();
  std::uint64_t removed = 0;
  bool operator==(const PinReply&) const = default;
};

// `import`: a bundle (.tar.zst) to verify and publish into the daemon's cache; the open file
// travels as SCM_RIGHTS descriptor `fd`. `env` as in FetchRequest (the trust variables).
struct ImportRequest {
  RequestId id = 0;
  std::size_t fd = 0;  // index into the frame's SCM_RIGHTS array
  std::map<std::string, std::string> env;
  bool operator==(const ImportRequest&) const = default;
};

// `imported`: one object per repo, as `kernelhub bundle import --json` prints it; checked to be
// an array, passed through.
struct ImportReply {
  RequestId id = 0;
  nlohmann::json repos = nlohmann::json::array();
  bool operator==(const ImportReply&) const = default;
};

// `code` stays a string: a newer daemon may send codes this build does not know.
struct ErrorReply {
  std::optional<RequestId> id;
  std::string code;
  std::string message;
  bool operator==(const ErrorReply&) const = default;
};

using Message = std::variant<Hello, FetchRequest, Progress, Fetched, StatusRequest, StatusReply,
                             LsRequest, LsReply, VerifyRequest, VerifyReply, GcRequest, GcReply,
                             ImportRequest, ImportReply, PinRequest, PinReply, ErrorReply>;

// Who sent the frame. `status`, `ls` and `gc` name both a request and its reply.
enum class Sender { client, daemon };

// Strict parse of a frame sent by `sender`: the daemon parses with Sender::client, so a
// client sending `fetched` gets unknown_request. unknown_request/invalid_request errors
// mention the request id when the frame had a valid one (see request_id_of).
Result<Message> parse_message(const nlohmann::json& frame, Sender sender);
// Direction-free: `status`/`ls`/`gc` are replies when they carry the reply's first member
// (`counters`, `repos`, `removed_snapshots`). For tools and the fuzzer; peers use the above.
Result<Message> parse_message(const nlohmann::json& frame);

// The integer `id` of a frame, if it has one (to address an error reply to a bad request).
std::optional<RequestId> request_id_of(const nlohmann::json& frame);

nlohmann::json to_json(const Hello& m);
nlohmann::json to_json(const FetchRequest& m);
nlohmann::json to_json(const Progress& m);
nlohmann::json to_json(const Fetched& m);
nlohmann::json to_json(const StatusRequest& m);
nlohmann::json to_json(const Counters& m);
nlohmann::json to_json(const StatusReply& m);
nlohmann::json to_json(const LsRequest& m);
nlohmann::json to_json(const LsReply& m);
nlohmann::json to_json(const VerifyRequest& m);
nlohmann::json to_json(const VerifyReply& m);
nlohmann::json to_json(const GcRequest& m);
nlohmann::json to_json(const GcReply& m);
nlohmann::json to_json(const PinRequest& m);
nlohmann::json to_json(const PinReply& m);
nlohmann::json to_json(const ImportRequest& m);
nlohmann::json to_json(const ImportReply& m);
nlohmann::json to_json(const ErrorReply& m);
nlohmann::json to_json(const Message& m);

// The wire `type` of a message (`fetch`/`prefetch` follow FetchRequest::prefetch).
std::string_view type_name(const Message& m);

// Error <-> error frame. A code this build does not know becomes protocol_error, with the
// received code kept in the message.
ErrorReply to_error_reply(const Error& error, std::optional<RequestId> id = std::nullopt);
Error to_error(const ErrorReply& reply);

struct Negotiated {
  int protocol = 0;
  std::vector<std::string> capabilities;  // in the client's order
};

// The lower of the two versions and the shared capabilities. unsupported_protocol when the
// client's version is below daemon_min (or not positive).
Result<Negotiated> negotiate(const Hello& client, int daemon_min, int daemon_max,
                             const std::vector<std::string>& daemon_caps);

}  // namespace kernelhub::proto
