#include "kernelhub/proto/prometheus.hpp"

#include <array>
#include <charconv>
#include <cstdint>
#include <string_view>

namespace kernelhub::proto {
namespace {

std::string number(double value) {
  std::array<char, 32> buffer{};
  const auto end = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value).ptr;
  return {buffer.data(), end};
}
std::string number(std::uint64_t value) { return std::to_string(value); }
std::string number(int value) { return std::to_string(value); }

class Exposition {
 public:
  // One family: its HELP and TYPE lines, then its samples.
  Exposition& family(const char* name, const char* type, const char* help) {
    out_ += std::string("# HELP ") + name + ' ' + help + "\n# TYPE " + name + ' ' + type + '\n';
    return *this;
  }
  template <class Value>
  Exposition& sample(const std::string& name, Value value, const std::string& labels = {}) {
    out_ += name;
    if (!labels.empty()) out_ += '{' + labels + '}';
    out_ += ' ' + number(value) + '\n';
    return *this;
  }
  template <class Value>
  Exposition& single(const char* name, const char* type, const char* help, Value value) {
    return family(name, type, help).sample(name, value);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Label values here are code names and version strings; escape what the format requires.
std::string label_value(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void flight_histogram(Exposition& e, const Counters& c) {
  constexpr const char* kName = "kernelhub_flight_duration_seconds";
  e.family(kName, "histogram",
           "Time from the start of a download flight (after its turn) to its result.");
  std::uint64_t cumulative = 0;
  const bool have = c.flight_seconds_buckets.size() == kFlightSecondsBounds.size() + 1;
  for (std::size_t i = 0; i < kFlightSecondsBounds.size(); ++i) {
    if (have) cumulative += c.flight_seconds_buckets[i];
    e.sample(std::string(kName) + "_bucket", cumulative,
             "le=\"" + number(kFlightSecondsBounds[i]) + '"');
  }
  if (have) cumulative += c.flight_seconds_buckets.back();
  e.sample(std::string(kName) + "_bucket", cumulative, "le=\"+Inf\"");
  e.sample(std::string(kName) + "_sum", c.flight_seconds_sum);
  e.sample(std::string(kName) + "_count", cumulative);
}

}  // namespace

std::string render_prometheus(const StatusReply& status) {
  const Counters& c = status.counters;
  Exposition e;
  e.single("kernelhub_up", "gauge", "1 when kernelhubd answered.", 1);
  e.family("kernelhub_build_info", "gauge", "The daemon's name and version, as a label.")
      .sample("kernelhub_build_info", 1,
              "daemon=\"" + label_value(status.daemon) + "\",protocol=\"" +
                  std::to_string(status.protocol) + '"');
  e.single("kernelhub_uptime_seconds", "gauge", "Seconds since kernelhubd started.",
           status.uptime_s);
  e.single("kernelhub_requests_total", "counter", "Requests on the Unix socket.", c.requests);
  e.single("kernelhub_http_requests_total", "counter",
           "Requests on the --http listener (the local Hub and /metrics).", c.http_requests);
  e.single("kernelhub_cache_hits_total", "counter",
           "Fetches served from the cache without a download.", c.hits);
  e.single("kernelhub_cache_misses_total", "counter", "Fetches that downloaded files.", c.misses);
  e.single("kernelhub_flights_total", "counter",
           "Download flights started (one per kernel, shared by every client that asks at once).",
           c.flights);
  e.single("kernelhub_flights_in_flight", "gauge", "Flights running or waiting for a turn.",
           c.flights_active);
  flight_histogram(e, c);
  e.single("kernelhub_upstream_requests_total", "counter",
           "HTTP requests sent upstream (API calls and files).", c.upstream_requests);
  e.single("kernelhub_upstream_bytes_total", "counter", "File bytes downloaded from upstream.",
           c.bytes_downloaded);
  e.family("kernelhub_errors_total", "counter", "Errors answered to clients, by error code.");
  for (const auto& [name, count] : c.errors_by_class)
    e.sample("kernelhub_errors_total", count, "class=\"" + label_value(name) + '"');
  std::uint64_t classified = 0;
  for (const auto& [name, count] : c.errors_by_class) classified += count;
  // Daemons before the classes counted errors only in total.
  if (c.errors > classified)
    e.sample("kernelhub_errors_total", c.errors - classified, "class=\"unclassified\"");
  e.family("kernelhub_refusals_total", "counter",
           "Fetches refused by a policy decision: the trust rule, the rollback guard ([vN] moved "
           "to a non-descendant), or [signatures].")
      .sample("kernelhub_refusals_total", c.trust_refused, "decision=\"trust\"")
      .sample("kernelhub_refusals_total", c.rollbacks_refused, "decision=\"rollback\"")
      .sample("kernelhub_refusals_total", c.signatures_refused, "decision=\"signature\"");
  e.single("kernelhub_signature_warnings_total", "counter",
           "Hand-outs served with a signature warning ([signatures] mode = \"warn\").",
           c.signatures_warned);
  e.single("kernelhub_connections_total", "counter", "Unix-socket connections accepted.",
           c.connections);
  e.single("kernelhub_connections_active", "gauge", "Unix-socket connections open now.",
           c.active_connections);
  e.single("kernelhub_cache_bytes", "gauge",
           "Bytes of the blobs in the daemon's cache, as of its last eviction pass.",
           c.cache_bytes);
  e.single("kernelhub_cache_free_bytes", "gauge",
           "Bytes free (to unprivileged writers) on the cache's file system.", c.cache_free_bytes);
  e.single("kernelhub_cache_pinned_bytes", "gauge",
           "Bytes the pinned variants hold (kernelhub pin), as of the last eviction pass.",
           c.cache_pinned_bytes);
  e.single("kernelhub_evictions_total", "counter",
           "Variants (and bare snapshots) removed by eviction and gc.", c.evictions);
  e.single("kernelhub_evicted_bytes_total", "counter", "Blob bytes removed by eviction and gc.",
           c.evicted_bytes);
  return e.take();
}

std::string render_prometheus_down() {
  Exposition e;
  e.single("kernelhub_up", "gauge", "1 when kernelhubd answered.", 0);
  return e.take();
}

}  // namespace kernelhub::proto
