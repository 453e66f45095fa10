// The fault plan at the HubServer's hooks: test endpoints and request records, the global
// 429/503 failure, redirects and range faults of file downloads, and the body faults (stall,
// reset, trickle, endless, one corrupt byte) wrapped around the server's own body writer.
#include "support/fault_hub/fault_hooks.hpp"

#include <nlohmann/json.hpp>

#include "kernelhub/http/http_replies.hpp"
#include "kernelhub/util/json_bounds.hpp"

namespace kernelhub::testing {
namespace {

using hub::server::FileBody;
using hub::server::FileDownload;

bool is_test_path(const std::string& path) { return path.rfind("/_kernelhub/", 0) == 0; }

void send_failure(httplib::Response& res, const FaultPlan& plan) {
  if (plan.fail_status == 429) {
    const std::string t = std::to_string(plan.retry_after_seconds);
    res.set_header("Retry-After", t);
    res.set_header("RateLimit", R"("api";r=0;t=)" + t);
    res.set_header("RateLimit-Policy", R"("fixed window";"api";q=500;w=300)");
    return http::send_error(res, 429, "RateLimited", "rate limited (injected fault)");
  }
  if (plan.retry_after_seconds > 0)
    res.set_header("Retry-After", std::to_string(plan.retry_after_seconds));
  http::send_error(res, plan.fail_status, "InjectedFault",
                   "injected failure " + std::to_string(plan.fail_status));
}

// Bounds what a test in another process may ask /_kernelhub/requests/wait to wait for.
constexpr std::chrono::milliseconds kMaxRecordWait{60'000};

std::size_t matching(const std::vector<RequestRecord>& records, const std::string& method,
                     const std::string& path_part) {
  std::size_t n = 0;
  for (const auto& r : records) {
    if ((method.empty() || r.method == method) && r.path.find(path_part) != std::string::npos) ++n;
  }
  return n;
}

bool has_body_fault(const FaultPlan& plan) {
  return plan.stall || plan.reset_after_bytes || plan.trickle_bytes_per_second > 0 ||
         plan.endless || plan.corrupt_one_byte;
}

}  // namespace

void FaultHooks::add_routes(httplib::Server& server) {
  if (!test_endpoints_) return;
  server.Get("/_kernelhub/requests", [this](const httplib::Request&, httplib::Response& res) {
    http::send_json(res, to_json(records()));
  });
  // ?method=GET&part=.so&count=2&timeout_ms=5000: answers once `count` requests match, or
  // at the timeout; {"reached": bool}.
  server.Get(
      "/_kernelhub/requests/wait", [this](const httplib::Request& req, httplib::Response& res) {
        const auto number = [&](const char* key) -> std::optional<std::uint64_t> {
          const std::string text = req.get_param_value(key);
          if (text.empty() || text.size() > 9 ||
              text.find_first_not_of("0123456789") != std::string::npos) {
            return std::nullopt;
          }
          return std::stoull(text);
        };
        const auto count = number("count");
        const auto timeout = number("timeout_ms");
        if (!count || !timeout) {
          return http::send_error(res, 400, "BadRequest", "count and timeout_ms must be numbers");
        }
        const bool reached =
            wait_records(req.get_param_value("method"), req.get_param_value("part"), *count,
                         std::min(std::chrono::milliseconds(*timeout), kMaxRecordWait));
        http::send_json(res, nlohmann::json{{"reached", reached}});
      });
  server.Post("/_kernelhub/requests/reset",
              [this](const httplib::Request&, httplib::Response& res) {
                reset_records();
                http::send_json(res, nlohmann::json::object());
              });
  server.Post("/_kernelhub/faults", [this](const httplib::Request& req, httplib::Response& res) {
    auto body = util::parse_bounded_json(req.body, util::kRequestBodyJson);
    if (!body)
      return http::send_error(res, 400, "BadRequest", "bad fault plan: " + body.error().message);
    auto plan = fault_plan_from_json(*body);
    if (!plan) return http::send_error(res, 400, "BadRequest", plan.error().message);
    set_plan(*plan);
    http::send_json(res, to_json(*plan));
  });
}

bool FaultHooks::before_route(const httplib::Request& req, httplib::Response& res) {
  if (is_test_path(req.path)) return false;
  if (auto failure = take_failure(req.path)) {
    http::take_ranges(req);
    send_failure(res, *failure);
    return true;
  }
  return answer_repo_faults(plan(), req, res);
}

namespace {

// declared_sizes: the listing's sizes of the matching entries replaced.
void declare_sizes(const FaultPlan& plan, const httplib::Request& req, httplib::Response& res) {
  if (plan.declared_sizes.empty() || req.path.find("/tree/") == std::string::npos ||
      res.status != 200) {
    return;
  }
  auto listing = nlohmann::json::parse(res.body, nullptr, false);
  if (!listing.is_array()) return;
  for (auto& entry : listing) {
    const std::string path = entry.value("path", "");
    for (const auto& [key, size] : plan.declared_sizes) {
      if (path.find(key) == std::string::npos) continue;
      entry["size"] = size;
      if (entry.contains("lfs") && entry["lfs"].is_object()) entry["lfs"]["size"] = size;
    }
  }
  res.body = listing.dump();
  res.headers.erase("Content-Length");  // it changed: one header, the new length
  res.set_header("Content-Length", std::to_string(res.body.size()));
}

}  // namespace

void FaultHooks::after_route(const httplib::Request& req, httplib::Response& res) {
  if (is_test_path(req.path)) return;
  declare_sizes(plan(), req, res);
  apply_api_slow_faults(plan(), req, res);
  std::lock_guard lock(mutex_);
  records_.push_back(
      {req.method, req.path, res.status, !req.get_header_value("Authorization").empty()});
  recorded_.notify_all();
}

void FaultHooks::stopping() {
  std::lock_guard lock(mutex_);  // a waiter between its check and its wait still wakes
  stopping_ = true;
  recorded_.notify_all();
}

bool FaultHooks::before_file(const httplib::Request& req, httplib::Response& res,
                             const FileDownload& file) {
  const FaultPlan plan = download_faults(file.repo_path, false);
  if (file.stage == FileDownload::Stage::resolve) {
    if (plan.redirect_to.empty()) return false;
    res.status = 302;
    res.set_header("Location", plan.redirect_to + req.target);
    return true;
  }
  if (plan.ignore_range) {  // served whole, 200
    http::take_ranges(req);
    return false;
  }
  if (plan.refuse_ranges && req.ranges.size() == 1) {
    http::take_ranges(req);
    res.set_header("Content-Range", "bytes */" + std::to_string(file.size));
    http::send_error(res, 416, "RangeNotSatisfiable",
                     "range not satisfiable for a " + std::to_string(file.size) + "-byte file");
    return true;
  }
  return false;
}

void FaultHooks::shape_body(const FileDownload& file, FileBody& body) {
  FaultPlan plan = download_faults(file.repo_path, true);
  if (!slow_faults_for_files(plan)) {
    plan.stall.reset();
    plan.trickle_bytes_per_second = 0;
    plan.endless = false;
  }
  if (!has_body_fault(plan)) return;
  struct Progress {
    std::uint64_t sent = 0;
    bool stalled = false;
  };
  auto progress = std::make_shared<Progress>();
  body.chunked = plan.endless;
  body.write = [this, plan, progress, inner = std::move(body.write), first = body.first,
                length = body.length, flip = file.size / 2](std::size_t offset, std::size_t want,
                                                            httplib::DataSink& sink) {
    if (plan.stall && !progress->stalled) {
      progress->stalled = true;
      if (!sleep_unless_stopping(*plan.stall)) return false;
    }
    if (plan.reset_after_bytes) {
      if (progress->sent >= *plan.reset_after_bytes) return false;  // drop mid-body
      want = std::min<std::uint64_t>(want, *plan.reset_after_bytes - progress->sent);
    }
    if (!trickle_step(plan.trickle_bytes_per_second, want)) return false;
    // Endless: the body's bytes over and over, never an end (chunked, no Content-Length).
    if (plan.endless) offset %= static_cast<std::size_t>(length);
    // What the server's writer sends passes through here: counted, one byte flipped.
    std::uint64_t written = 0;
    httplib::DataSink counted;
    counted.is_writable = [&sink] { return sink.is_writable(); };
    counted.write = [&](const char* data, std::size_t n) {
      const std::uint64_t pos = first + offset + written;
      written += n;
      // Counted before the send: a test reads the count as soon as its client gives up,
      // while this send may still be blocked on the socket.
      if (plan.trickle_bytes_per_second > 0 || plan.endless) add_paced(n);
      if (!plan.corrupt_one_byte || flip < pos || flip >= pos + n) return sink.write(data, n);
      std::string copy(data, n);
      copy[flip - pos] = static_cast<char>(copy[flip - pos] ^ 0x5a);
      return sink.write(copy.data(), n);
    };
    const bool wrote = inner(offset, want, counted);
    progress->sent += written;
    return wrote;
  };
}

void FaultHooks::set_plan(const FaultPlan& plan) {
  std::lock_guard lock(mutex_);
  plan_ = plan;
}

FaultPlan FaultHooks::plan() const {
  std::lock_guard lock(mutex_);
  return plan_;
}

std::vector<RequestRecord> FaultHooks::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::size_t FaultHooks::count_records(const std::string& method,
                                      const std::string& path_part) const {
  std::lock_guard lock(mutex_);
  return matching(records_, method, path_part);
}

bool FaultHooks::wait_records(const std::string& method, const std::string& path_part,
                              std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return recorded_.wait_for(lock, timeout, [&] {
    return stopping_ || matching(records_, method, path_part) >= n;
  }) && !stopping_;
}

void FaultHooks::reset_records() {
  std::lock_guard lock(mutex_);
  records_.clear();
}

std::optional<FaultPlan> FaultHooks::take_failure(const std::string& path) {
  std::lock_guard lock(mutex_);
  if (plan_.fail_status == 0 || plan_.fail_count <= 0) return std::nullopt;
  if (!plan_.fail_path_filter.empty() && path.find(plan_.fail_path_filter) == std::string::npos)
    return std::nullopt;
  --plan_.fail_count;
  return plan_;
}

FaultPlan FaultHooks::download_faults(const std::string& repo_path, bool consume) {
  std::lock_guard lock(mutex_);
  if (!plan_.path_filter.empty() && repo_path.find(plan_.path_filter) == std::string::npos)
    return FaultPlan{};
  FaultPlan applied = plan_;
  if (plan_.reset_after_bytes && plan_.reset_times > 0) {
    if (consume) --plan_.reset_times;
  } else {
    applied.reset_after_bytes.reset();
  }
  return applied;
}

}  // namespace kernelhub::testing
