#include "kernelhub/http/http_replies.hpp"

#include <array>
#include <cctype>
#include <ctime>

#include "kernelhub/util/error_table.hpp"

namespace kernelhub::http {

httplib::Ranges take_ranges(const httplib::Request& req) {
  auto& mutable_req = const_cast<httplib::Request&>(req);  // NOLINT: see header
  httplib::Ranges ranges;
  ranges.swap(mutable_req.ranges);
  return ranges;
}

void send_json(httplib::Response& res, const nlohmann::json& body, int status) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& code,
                const std::string& message) {
  res.status = status;
  res.set_header("X-Error-Code", code);
  // Header values must stay on one line.
  std::string one_line = message;
  for (char& c : one_line) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  res.set_header("X-Error-Message", one_line);
  res.set_content(nlohmann::json{{"error", message}}.dump(-1, ' ', false,
                                                          nlohmann::json::error_handler_t::replace),
                  "application/json");
}

void register_error_handler(httplib::Server& server) {
  server.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
        if (res.has_header("X-Error-Code") || res.has_header("X-Error-Message"))
          return httplib::Server::HandlerResponse::Unhandled;
        take_ranges(req);
        const bool not_found = res.status == 404;
        send_error(res, res.status, not_found ? "RepoNotFound" : "BadRequest",
                   (not_found ? "no such endpoint: "
                              : "request refused with HTTP " + std::to_string(res.status) + ": ") +
                       req.method + " " + req.path);
        return httplib::Server::HandlerResponse::Handled;
      }));
}

void send_hub_error(httplib::Response& res, const Error& error) {
  const ErrorInfo& info = error_info(error.code);
  send_error(res, info.http_status, std::string(info.hub_code), error.message);
}

std::string iso_time(std::int64_t seconds) {
  const auto t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 32> buf{};
  std::strftime(buf.data(), buf.size(), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
  return buf.data();
}

}  // namespace kernelhub::http
