// JSON forms of FaultPlan and RequestRecord, as used by the /_kernelhub test endpoints:
// {"reset_after_bytes": N|null, "reset_times", "stall_ms": N|null, "corrupt_one_byte",
//  "fail_status", "fail_count", "retry_after_seconds", "ignore_range", "refuse_ranges",
//  "path_filter", "trickle_bytes_per_second", "endless", "scope", "redirect_to"}.
// Missing keys keep their defaults.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "kernelhub/hub/server/hub_server.hpp"
#include "kernelhub/util/result.hpp"

namespace kernelhub::hub::server {

nlohmann::json to_json(const FaultPlan& plan);
Result<FaultPlan> fault_plan_from_json(const nlohmann::json& json);
nlohmann::json to_json(const std::vector<RequestRecord>& records);

}  // namespace kernelhub::hub::server
