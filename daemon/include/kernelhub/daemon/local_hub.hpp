// kernelhubd's local Hub (`kernelhubd --http 127.0.0.1:PORT`): the subset of the Hub API
// that huggingface_hub and `kernels` use (organization overview, refs, revision, tree,
// resolve), read-only, for the Python processes of this host. API answers come from
// upstream through a memo shared by every client; file bytes under build/<variant>/ come
// from the daemon's verified cache through the same single-flight fetch path as the Unix
// socket. Also /metrics (Prometheus).
//
// There is no peer credential and no client environment over HTTP: the admin policy alone
// decides trust here (a client's trust_remote_code or DIFFUSERS_TRUST_REMOTE_KERNELS cannot
// reach us), and refusals say so.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/daemon/fetch_service.hpp"
#include "kernelhub/http/http_limits.hpp"
#include "kernelhub/proto/messages.hpp"
#include "kernelhub/util/environment.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::daemon {

struct LocalHubOptions {
  std::string host = "127.0.0.1";  // loopback only: 127.0.0.0/8, ::1 or localhost
  int port = 0;                    // 0: pick a free port
  std::chrono::seconds resolve_ttl{60};
  util::Environment env;  // HF_ENDPOINT, HF_TOKEN, HF_HUB_* for the upstream API calls
  // Head and body bounds, header deadline, connection caps
  // (kernelhub/http/http_limits.hpp).
  http::HttpListenerLimits limits;
};

// "HOST:PORT" ("[::1]:PORT" for IPv6) -> host and port; refuses anything but loopback.
// start() checks the address it actually bound as well (`localhost` is 127.0.0.1).
Result<LocalHubOptions> parse_http_listen(const std::string& text);

class LocalHub {
 public:
  using StatusSource = std::function<proto::StatusReply()>;
  LocalHub(LocalHubOptions options, FetchService& service, AtomicCounters& counters,
           StatusSource status);
  ~LocalHub();  // stops serving
  LocalHub(const LocalHub&) = delete;
  LocalHub& operator=(const LocalHub&) = delete;

  // Binds and serves on background threads.
  Result<void> start();
  void stop();
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kernelhub::daemon
