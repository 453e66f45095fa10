// The test Hub: the product's HubServer (kernelhub serve) decorated, through its hooks, with
// a fault plan and a record of the requests it answered. Tests start it in-process; tests in
// other processes (Python conformance, the site tier, benches, the demo) run it as the
// test-only executable kh-test-hub and drive it over /_kernelhub/{requests,faults}.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernelhub/hub/server/hub_server.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::testing {

// Test knobs. Each applies to file downloads (GET /resolve and the LFS object URL) whose
// repo-relative path contains `path_filter` (empty: all files), except fail_status which
// applies to every request (API calls included) while fail_count > 0, and the slow-upstream
// knobs, which follow `scope`.
struct FaultPlan {
  std::optional<std::uint64_t> reset_after_bytes;  // send N body bytes, then drop the connection
  int reset_times = 1;                             // how many responses get reset
  std::optional<std::chrono::milliseconds> stall;  // after headers, send nothing for this long
  bool corrupt_one_byte = false;                   // flip one byte in the middle, same length
  int fail_status = 0;                             // e.g. 429 or 503
  int fail_count = 0;                              // how many requests get fail_status
  int retry_after_seconds = 0;                     // sent as Retry-After / RateLimit t=
  bool ignore_range = false;                       // answer 200 with the full body
  // A Range request answers 416 with "bytes */<size>", as a server whose copy is shorter than
  // the range start would (a file changed under its URL, a truncating proxy).
  bool refuse_ranges = false;
  // Slow upstreams. trickle: bodies go out at this many bytes/s (0: full speed). endless: a
  // body that never ends (chunked, no length; the same bytes over and over). Like stall they
  // act where `scope` says: "files" (downloads whose path contains path_filter), "api" (/api/
  // replies whose request path contains path_filter, e.g. "/refs" or "/tree/") or "all".
  std::uint64_t trickle_bytes_per_second = 0;
  bool endless = false;
  std::string scope = "files";
  // File downloads matching path_filter answer 302 to this base URL + the request path and
  // query (e.g. a plain http:// server: a client must refuse to leave https).
  std::string redirect_to;
  std::string path_filter;
  // fail_status only for request paths containing this (e.g. "/revision/" or "/refs": the
  // Hub failing revision resolution while files still serve); empty: every request.
  std::string fail_path_filter;

  // Real-Hub behaviours (research/hub-realism.md), applied to every API and resolve request:
  // A renamed or transferred repo, "org/name" -> "org2/name2": requests of the first answer
  // 307 with a relative Location naming the second (query kept), as the Hub does.
  std::map<std::string, std::string> renames;
  // A request without Authorization for a repo that is not found (not in the store, or a
  // model_only_repos entry asked as a kernel) or is listed in private_repos answers 401
  // "Invalid username or password." without X-Error-Code, as the Hub answers anonymous users.
  bool anonymous_401 = false;
  // Tree listings (/tree/): an entry whose path contains a key is listed at that size (and
  // its LFS size too): an upstream that lies about a file, e.g. a 1 GB source.
  std::map<std::string, std::uint64_t> declared_sizes;
  std::set<std::string> private_repos;
  // Legacy kernel repos that exist only under the model type: /api/kernels/... and
  // /kernels/.../resolve/... of them are not found.
  std::set<std::string> model_only_repos;
};

struct RequestRecord {
  std::string method;
  std::string path;  // request path without the query string
  int status = 0;
  bool authorization = false;  // an Authorization header was sent
};

// JSON forms, as the /_kernelhub endpoints speak them: {"reset_after_bytes": N|null,
// "reset_times", "stall_ms": N|null, "corrupt_one_byte", "fail_status", "fail_count",
// "retry_after_seconds", "ignore_range", "refuse_ranges", "path_filter",
// "trickle_bytes_per_second", "endless", "scope", "redirect_to", "fail_path_filter",
// "renames", "anonymous_401", "private_repos", "model_only_repos"}. Missing keys keep their
// defaults.
nlohmann::json to_json(const FaultPlan& plan);
Result<FaultPlan> fault_plan_from_json(const nlohmann::json& json);
nlohmann::json to_json(const std::vector<RequestRecord>& records);

class FaultHooks;

class FaultHub {
 public:
  // test_endpoints: /_kernelhub/{requests,requests/reset,faults}, for tests in other processes.
  explicit FaultHub(hub::server::ServerOptions options, bool test_endpoints = false);
  ~FaultHub();  // stops the server
  FaultHub(const FaultHub&) = delete;
  FaultHub& operator=(const FaultHub&) = delete;

  Result<void> start();  // binds and serves on a background thread
  Result<void> run();    // serves on the calling thread until stop()
  void stop();
  int port() const;
  std::string endpoint() const;

  void set_faults(const FaultPlan& plan);
  std::vector<RequestRecord> requests() const;
  // Requests whose method equals `method` (any method when empty) and whose path contains
  // `path_part`.
  std::size_t count(const std::string& method, const std::string& path_part) const;
  // Waits until `n` requests match as count() counts them, up to `timeout`; false when it
  // timed out. Tests wait on this instead of polling count().
  bool wait_for(const std::string& method, const std::string& path_part, std::size_t n,
                std::chrono::milliseconds timeout) const;
  // Requests answered with `status` whose path contains `path_part`.
  std::size_t count_status(int status, const std::string& path_part = "") const;
  void reset_requests();
  // Body bytes sent so far under the trickle and endless faults.
  std::uint64_t paced_bytes() const;

 private:
  std::shared_ptr<FaultHooks> hooks_;
  std::unique_ptr<hub::server::HubServer> server_;
};

}  // namespace kernelhub::testing
