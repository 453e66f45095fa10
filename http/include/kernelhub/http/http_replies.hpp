// Hub-style HTTP replies over cpp-httplib, shared by `kernelhub serve` (kh_hub_server's
// routes) and kernelhubd's local Hub (daemon/local_hub.cpp): one place that decides how an
// error looks to huggingface_hub (status, X-Error-Code, X-Error-Message, {"error": ...}).
#pragma once

#include <httplib.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "kernelhub/util/result.hpp"

namespace kernelhub::http {

// httplib 0.11 applies Range itself without bounds checks; file routes take the parsed
// ranges out of the request and answer 206/416 themselves. The Request object is not
// const inside httplib (only the handler signature is), so clearing it is well-defined.
httplib::Ranges take_ranges(const httplib::Request& req);

void send_json(httplib::Response& res, const nlohmann::json& body, int status = 200);
// A Hub-style error: X-Error-Code, X-Error-Message and {"error": message}.
void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& message);
// Maps an error to the Hub's status and X-Error-Code (not found: 404 RepoNotFound,
// RevisionNotFound, EntryNotFound; refusals by policy: 403; upstream trouble: 502/504).
void send_hub_error(httplib::Response& res, const Error& error);

// Unrouted requests get a Hub-style error (RepoNotFound/BadRequest); their Range header is
// taken out so httplib does not apply it to the error body. Hub errors already answered
// (a bare 401 has only X-Error-Message) stay as they are.
void register_error_handler(httplib::Server& server);

std::string iso_time(std::int64_t seconds);

}  // namespace kernelhub::http
