// The Prometheus rendering of `status`. The reference parser (prometheus_client) reads the
// live /metrics in tests/conformance/test_daemon_http.py; here: shape and arithmetic.
#include <sstream>

#include <catch2/catch.hpp>

#include "kernelhub/proto/prometheus.hpp"

using namespace kernelhub::proto;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  const auto lines = lines_of(text);
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

}  // namespace

TEST_CASE("render_prometheus: every family typed, histogram cumulative", "[proto][prometheus]") {
  StatusReply status;
  status.daemon = "kernelhubd/0.1.0";
  status.uptime_s = 2.5;
  status.counters.requests = 10;
  status.counters.errors = 5;
  status.counters.errors_by_class = {{"repo_not_found", 2}, {"untrusted_publisher", 1}};
  status.counters.trust_refused = 1;
  status.counters.rollbacks_refused = 3;
  status.counters.flights = 4;
  status.counters.flight_seconds_buckets.assign(kFlightSecondsBounds.size() + 1, 0);
  status.counters.flight_seconds_buckets[0] = 1;      // <= 5 ms
  status.counters.flight_seconds_buckets[5] = 2;      // <= 250 ms
  status.counters.flight_seconds_buckets.back() = 1;  // > 30 s
  status.counters.flight_seconds_sum = 31.5;
  const std::string text = render_prometheus(status);

  CHECK(lines_of(text).front() == "# HELP kernelhub_up 1 when kernelhubd answered.");
  CHECK(has_line(text, "kernelhub_up 1"));
  CHECK(has_line(text, "kernelhub_requests_total 10"));
  CHECK(has_line(text, "kernelhub_uptime_seconds 2.5"));
  CHECK(has_line(text, R"(kernelhub_build_info{daemon="kernelhubd/0.1.0",protocol="1"} 1)"));
  CHECK(has_line(text, R"(kernelhub_errors_total{class="repo_not_found"} 2)"));
  // Errors counted before classes existed keep the total right.
  CHECK(has_line(text, R"(kernelhub_errors_total{class="unclassified"} 2)"));
  CHECK(has_line(text, R"(kernelhub_refusals_total{decision="rollback"} 3)"));
  CHECK(has_line(text, R"(kernelhub_flight_duration_seconds_bucket{le="0.005"} 1)"));
  CHECK(has_line(text, R"(kernelhub_flight_duration_seconds_bucket{le="0.25"} 3)"));
  CHECK(has_line(text, R"(kernelhub_flight_duration_seconds_bucket{le="30"} 3)"));
  CHECK(has_line(text, R"(kernelhub_flight_duration_seconds_bucket{le="+Inf"} 4)"));
  CHECK(has_line(text, "kernelhub_flight_duration_seconds_count 4"));
  CHECK(has_line(text, "kernelhub_flight_duration_seconds_sum 31.5"));

  // Each sample belongs to the family announced by the TYPE line above it.
  std::string family;
  for (const auto& line : lines_of(text)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      continue;
    }
    if (line.rfind('#', 0) == 0) continue;
    INFO(line);
    CHECK(line.rfind(family, 0) == 0);
  }
}

TEST_CASE("render_prometheus_down says only that the daemon is down", "[proto][prometheus]") {
  const auto text = render_prometheus_down();
  CHECK(has_line(text, "kernelhub_up 0"));
  CHECK(lines_of(text).size() == 3);
}
