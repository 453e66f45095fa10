// Slow upstreams for the test Hub: a stall before the body, a body trickled at N bytes/s and
// a body that never ends, on file downloads (fault_hooks.cpp wraps the body writer with the
// helpers) and on /api/ replies (their finished body is swapped for a content provider here).
#include <thread>

#include "support/fault_hub/fault_hooks.hpp"

namespace kernelhub::testing {
namespace {

bool has_slow_knob(const FaultPlan& plan) {
  return plan.stall || plan.trickle_bytes_per_second > 0 || plan.endless;
}

// Writes `body` (over and over when endless) at the plan's pace.
bool write_paced(const FaultHooks& hooks, const FaultPlan& plan, const std::string& body,
                 std::size_t& sent, bool& stalled, httplib::DataSink& sink) {
  if (plan.stall && !stalled) {
    stalled = true;
    if (!hooks.sleep_unless_stopping(*plan.stall)) return false;
  }
  if (body.empty()) return false;
  const std::size_t pos = sent % body.size();
  std::size_t want = body.size() - pos;
  if (!hooks.trickle_step(plan.trickle_bytes_per_second, want)) return false;
  if (!sink.write(body.data() + pos, want)) return false;
  sent += want;
  if (plan.trickle_bytes_per_second > 0 || plan.endless) hooks.add_paced(want);
  return true;
}

}  // namespace

bool slow_faults_for_files(const FaultPlan& plan) {
  return plan.scope == "files" || plan.scope == "all";
}

bool slow_faults_for_api(const FaultPlan& plan, const std::string& request_path) {
  return (plan.scope == "api" || plan.scope == "all") && request_path.rfind("/api/", 0) == 0 &&
         request_path.find(plan.path_filter) != std::string::npos && has_slow_knob(plan);
}

bool FaultHooks::sleep_unless_stopping(std::chrono::milliseconds total) const {
  const auto until = std::chrono::steady_clock::now() + total;
  while (!stopping_ && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !stopping_;
}

bool FaultHooks::trickle_step(std::uint64_t rate, std::size_t& want) const {
  if (rate == 0) return !stopping_;
  // Ten steps a second at most, at least one byte per step.
  want = std::min<std::size_t>(want, std::max<std::uint64_t>(1, rate / 10));
  return sleep_unless_stopping(std::chrono::milliseconds(want * 1000 / rate));
}

void FaultHooks::apply_api_slow_faults(const FaultPlan& plan, const httplib::Request& req,
                                       httplib::Response& res) {
  if (!slow_faults_for_api(plan, req.path) || req.method == "HEAD") return;
  auto body = std::make_shared<std::string>(std::move(res.body));
  res.body.clear();
  std::string type = res.get_header_value("Content-Type");
  if (type.empty()) type = "application/json";
  res.headers.erase("Content-Type");  // the content provider sets it again
  res.headers.erase("Content-Length");
  auto sent = std::make_shared<std::size_t>(0);
  auto stalled = std::make_shared<bool>(false);
  if (plan.endless) {
    res.set_header("Transfer-Encoding", "chunked");
    res.set_chunked_content_provider(
        type, [this, plan, body, sent, stalled](std::size_t, httplib::DataSink& sink) {
          return write_paced(*this, plan, *body, *sent, *stalled, sink);
        });
    return;
  }
  res.set_header("Content-Length", std::to_string(body->size()));
  res.set_content_provider(
      body->size(), type,
      [this, plan, body, sent, stalled](std::size_t offset, std::size_t, httplib::DataSink& sink) {
        *sent = offset;
        return write_paced(*this, plan, *body, *sent, *stalled, sink);
      });
}

}  // namespace kernelhub::testing
