// The Hub routes of kernelhubd's local Hub (see local_hub.hpp): what each answers and from
// where. Trust is decided per request by the admin policy alone.
#pragma once

#include <httplib.h>

#include "kernelhub/daemon/counters.hpp"
#include "kernelhub/daemon/fetch_service.hpp"
#include "kernelhub/daemon/upstream_metadata.hpp"

namespace kernelhub::daemon {

struct RoutesContext {
  FetchService& service;
  UpstreamMetadata& metadata;
  AtomicCounters& counters;
};

class LocalHubRoutes {
 public:
  explicit LocalHubRoutes(RoutesContext context) : ctx_(context) {}
  void register_on(httplib::Server& server);

 private:
  RoutesContext ctx_;
};

}  // namespace kernelhub::daemon
