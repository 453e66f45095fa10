// Slow upstreams for the test Hub: a stall before the body, a body trickled at N bytes/s and
// a body that never ends, on file downloads (file_routes.cpp calls the helpers) and on /api/
// replies (their finished body is swapped for a content provider here).
#include <thread>

#include "kernelhub/hub/server/server_context.hpp"

namespace kernelhub::hub::server {
namespace {

bool has_slow_knob(const FaultPlan& plan) {
  return plan.stall || plan.trickle_bytes_per_second > 0 || plan.endless;
}

// Writes `body` (over and over when endless) at the plan's pace.
bool write_paced(const ServerContext& ctx, const FaultPlan& plan, const std::string& body,
                 std::size_t& sent, bool& stalled, httplib::DataSink& sink) {
  if (plan.stall && !stalled) {
    stalled = true;
    if (!sleep_unless_stopping(ctx, *plan.stall)) return false;
  }
  if (body.empty()) return false;
  const std::size_t pos = sent % body.size();
  std::size_t want = body.size() - pos;
  if (!trickle_step(ctx, plan.trickle_bytes_per_second, want)) return false;
  if (!sink.write(body.data() + pos, want)) return false;
  sent += want;
  if (plan.trickle_bytes_per_second > 0 || plan.endless) ctx.paced_bytes += want;
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

bool sleep_unless_stopping(const ServerContext& ctx, std::chrono::milliseconds total) {
  const auto until = std::chrono::steady_clock::now() + total;
  while (!ctx.stopping && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !ctx.stopping;
}

bool trickle_step(const ServerContext& ctx, std::uint64_t rate, std::size_t& want) {
  if (rate == 0) return !ctx.stopping;
  // Ten steps a second at most, at least one byte per step.
  want = std::min<std::size_t>(want, std::max<std::uint64_t>(1, rate / 10));
  return sleep_unless_stopping(ctx, std::chrono::milliseconds(want * 1000 / rate));
}

void apply_api_slow_faults(ServerContext& ctx, const httplib::Request& req,
                           httplib::Response& res) {
  FaultPlan plan;
  {
    std::lock_guard lock(ctx.mutex);
    plan = ctx.faults;
  }
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
        type, [&ctx, plan, body, sent, stalled](std::size_t, httplib::DataSink& sink) {
          return write_paced(ctx, plan, *body, *sent, *stalled, sink);
        });
    return;
  }
  res.set_header("Content-Length", std::to_string(body->size()));
  res.set_content_provider(
      body->size(), type,
      [&ctx, plan, body, sent, stalled](std::size_t offset, std::size_t, httplib::DataSink& sink) {
        *sent = offset;
        return write_paced(ctx, plan, *body, *sent, *stalled, sink);
      });
}

}  // namespace kernelhub::hub::server
