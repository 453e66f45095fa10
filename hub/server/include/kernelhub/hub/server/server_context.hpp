// Private to kh_hub_server: state shared by the HubServer core and its route handlers,
// plus the small response helpers every route uses.
#pragma once

#include <httplib.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/hub/server/hub_server.hpp"
#include "kernelhub/hub/server/local_store.hpp"

namespace kernelhub::hub::server {

struct ServerContext {
  explicit ServerContext(ServerOptions opts) : options(std::move(opts)), store(options.root) {}
  ServerOptions options;
  LocalStore store;
  int port = 0;
  std::atomic<bool> stopping{false};
  // Body bytes sent under a trickle or endless fault: tests prove the fault happened.
  mutable std::atomic<std::uint64_t> paced_bytes{0};

  mutable std::mutex mutex;  // guards faults and records
  FaultPlan faults;
  std::vector<RequestRecord> records;

  // Takes one 429/503 from the plan if any are left and `path` matches fail_path_filter.
  std::optional<FaultPlan> take_failure(const std::string& path = {});
  // The download faults that apply to `repo_path`; consumes one reset when `consume`.
  FaultPlan download_faults(const std::string& repo_path, bool consume);
  // "https://" when serving TLS, else "http://".
  std::string scheme() const {
    return options.tls_cert.empty() && options.tls_key.empty() ? "http://" : "https://";
  }
  // "http://host:port" as the client addressed us (Host header), for Location and Link.
  std::string base_url(const httplib::Request& req) const;
};

// A repo route's target: "kernels" or "models", and the repo id.
struct RepoTarget {
  std::string type;
  trust::RepoId repo;
};
std::optional<RepoTarget> repo_target(httplib::Response& res, const std::string& type,
                                      const std::string& org, const std::string& name);

// Splits "<rev>/<path>" where rev itself may contain '/': the longest prefix that
// resolves wins. need_path: the path part must be non-empty (resolve URLs).
struct RevisionAndPath {
  std::string revision;
  std::string commit;
  std::string path;
};
Result<RevisionAndPath> split_revision(const LocalStore& store, const trust::RepoId& repo,
                                       const std::string& rest, bool need_path);

// FaultPlan's renames, anonymous 401s and model-only repos (repo_faults.cpp); true when it
// answered the request.
bool answer_repo_faults(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

// Slow-upstream knobs (slow_faults.cpp): trickle, endless and stall.
// Whether the plan's slow knobs act on a file download / an /api/ reply at `path`.
bool slow_faults_for_files(const FaultPlan& plan);
bool slow_faults_for_api(const FaultPlan& plan, const std::string& request_path);
// Sleeps `total` in short steps; false when the server is stopping.
bool sleep_unless_stopping(const ServerContext& ctx, std::chrono::milliseconds total);
// Bytes to send next under a trickle of `rate` bytes/s (at most `want`); sleeps for their
// share of a second first. false when the server is stopping.
bool trickle_step(const ServerContext& ctx, std::uint64_t rate, std::size_t& want);
// Replaces a finished /api/ reply's body with one that stalls, trickles or never ends, as
// the plan says (called from the post-routing handler, before anything is written).
void apply_api_slow_faults(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

void register_api_routes(httplib::Server& server, ServerContext& ctx);
void register_file_routes(httplib::Server& server, ServerContext& ctx);

}  // namespace kernelhub::hub::server
