// kernelhubd's status in the Prometheus text exposition format (version 0.0.4): what
// `/metrics` on the --http listener serves and `kernelhub status --prometheus` prints for the
// node exporter's textfile collector. One renderer, so both say the same thing.
#pragma once

#include <string>

#include "kernelhub/proto/messages.hpp"

namespace kernelhub::proto {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

// Every metric of a running daemon, kernelhub_up 1 first.
std::string render_prometheus(const StatusReply& status);
// Only kernelhub_up 0: no daemon answered (a textfile must still say so, or the collector
// keeps serving the last file written while the daemon was up).
std::string render_prometheus_down();

}  // namespace kernelhub::proto
