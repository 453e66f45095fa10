#include "support/fault_hub/fault_hub.hpp"

namespace kernelhub::testing {

nlohmann::json to_json(const FaultPlan& plan) {
  nlohmann::json j;
  j["reset_after_bytes"] =
      plan.reset_after_bytes ? nlohmann::json(*plan.reset_after_bytes) : nlohmann::json(nullptr);
  j["reset_times"] = plan.reset_times;
  j["stall_ms"] = plan.stall ? nlohmann::json(plan.stall->count()) : nlohmann::json(nullptr);
  j["corrupt_one_byte"] = plan.corrupt_one_byte;
  j["fail_status"] = plan.fail_status;
  j["fail_count"] = plan.fail_count;
  j["retry_after_seconds"] = plan.retry_after_seconds;
  j["ignore_range"] = plan.ignore_range;
  j["refuse_ranges"] = plan.refuse_ranges;
  j["path_filter"] = plan.path_filter;
  j["trickle_bytes_per_second"] = plan.trickle_bytes_per_second;
  j["endless"] = plan.endless;
  j["scope"] = plan.scope;
  j["redirect_to"] = plan.redirect_to;
  j["fail_path_filter"] = plan.fail_path_filter;
  j["renames"] = plan.renames;
  j["anonymous_401"] = plan.anonymous_401;
  j["declared_sizes"] = plan.declared_sizes;
  j["private_repos"] = plan.private_repos;
  j["model_only_repos"] = plan.model_only_repos;
  return j;
}

Result<FaultPlan> fault_plan_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return fail(ErrorCode::invalid_argument, "fault plan must be a JSON object");
  FaultPlan plan;
  try {
    if (j.contains("reset_after_bytes") && !j["reset_after_bytes"].is_null()) {
      plan.reset_after_bytes = j["reset_after_bytes"].get<std::uint64_t>();
    }
    if (j.contains("stall_ms") && !j["stall_ms"].is_null()) {
      plan.stall = std::chrono::milliseconds(j["stall_ms"].get<std::int64_t>());
    }
    plan.reset_times = j.value("reset_times", plan.reset_times);
    plan.corrupt_one_byte = j.value("corrupt_one_byte", plan.corrupt_one_byte);
    plan.fail_status = j.value("fail_status", plan.fail_status);
    plan.fail_count = j.value("fail_count", plan.fail_count);
    plan.retry_after_seconds = j.value("retry_after_seconds", plan.retry_after_seconds);
    plan.ignore_range = j.value("ignore_range", plan.ignore_range);
    plan.refuse_ranges = j.value("refuse_ranges", plan.refuse_ranges);
    plan.path_filter = j.value("path_filter", plan.path_filter);
    plan.trickle_bytes_per_second =
        j.value("trickle_bytes_per_second", plan.trickle_bytes_per_second);
    plan.endless = j.value("endless", plan.endless);
    plan.scope = j.value("scope", plan.scope);
    if (plan.scope != "files" && plan.scope != "api" && plan.scope != "all")
      return fail(ErrorCode::invalid_argument, "fault scope must be files, api or all");
    plan.redirect_to = j.value("redirect_to", plan.redirect_to);
    plan.fail_path_filter = j.value("fail_path_filter", plan.fail_path_filter);
    if (j.contains("renames"))
      plan.renames = j["renames"].get<std::map<std::string, std::string>>();
    plan.anonymous_401 = j.value("anonymous_401", plan.anonymous_401);
    if (j.contains("declared_sizes")) {
      plan.declared_sizes = j["declared_sizes"].get<std::map<std::string, std::uint64_t>>();
    }
    if (j.contains("private_repos"))
      plan.private_repos = j["private_repos"].get<std::set<std::string>>();
    if (j.contains("model_only_repos"))
      plan.model_only_repos = j["model_only_repos"].get<std::set<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorCode::invalid_argument, std::string("bad fault plan: ") + e.what());
  }
  return plan;
}

nlohmann::json to_json(const std::vector<RequestRecord>& records) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : records)
    out.push_back({{"method", r.method},
                   {"path", r.path},
                   {"status", r.status},
                   {"authorization", r.authorization}});
  return out;
}

}  // namespace kernelhub::testing
