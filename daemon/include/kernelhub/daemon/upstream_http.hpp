// The daemon's HTTP client for Hub API calls: libcurl, plus a count of requests sent
// upstream for `status` (file downloads are counted from the fetch's progress).
#pragma once

#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/hub/http.hpp"

namespace kernelhub::daemon {

class UpstreamHttp final : public hub::HttpClient {
 public:
  UpstreamHttp(hub::HubConfig config, AtomicCounters& counters)
      : curl_(std::move(config)), counters_(counters) {}

  Result<hub::HttpResponse> send(const hub::HttpRequest& request) override {
    counters_.upstream_requests.fetch_add(1, std::memory_order_relaxed);
    return curl_.send(request);
  }

 private:
  hub::CurlHttpClient curl_;
  AtomicCounters& counters_;
};

}  // namespace kernelhub::daemon
