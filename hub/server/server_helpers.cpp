#include <ctime>

#include "hub/server/server_context.hpp"
#include "trust/error_table.hpp"

namespace kernelhub::hub::server {

std::optional<FaultPlan> ServerContext::take_failure(const std::string& path) {
  std::lock_guard lock(mutex);
  if (faults.fail_status == 0 || faults.fail_count <= 0) return std::nullopt;
  if (!faults.fail_path_filter.empty() && path.find(faults.fail_path_filter) == std::string::npos)
    return std::nullopt;
  --faults.fail_count;
  return faults;
}

FaultPlan ServerContext::download_faults(const std::string& repo_path, bool consume) {
  std::lock_guard lock(mutex);
  if (!faults.path_filter.empty() && repo_path.find(faults.path_filter) == std::string::npos)
    return FaultPlan{};
  FaultPlan applied = faults;
  if (faults.reset_after_bytes && faults.reset_times > 0) {
    if (consume) --faults.reset_times;
  } else {
    applied.reset_after_bytes.reset();
  }
  return applied;
}

std::string ServerContext::base_url(const httplib::Request& req) const {
  const std::string host = req.get_header_value("Host");
  const bool sane = !host.empty() && host.size() < 256 &&
                    host.find_first_not_of(
                        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") ==
                        std::string::npos;
  return scheme() + (sane ? host : options.bind_host + ":" + std::to_string(port));
}

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

bool parse_bool(const std::string& text) {
  std::string lower;
  for (char c : text)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return lower == "true" || lower == "1" || lower == "yes";
}

std::string url_encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(ch);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

std::string iso_time(std::int64_t seconds) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S.000Z", &tm);
  return buf;
}

std::optional<RepoTarget> repo_target(httplib::Response& res, const std::string& type,
                                      const std::string& org, const std::string& name) {
  auto repo = trust::RepoId::parse(org + "/" + name);
  if (!repo) {
    send_error(res, 404, "RepoNotFound", repo.error().message);
    return std::nullopt;
  }
  return RepoTarget{type, std::move(*repo)};
}

Result<RevisionAndPath> split_revision(const LocalStore& store, const trust::RepoId& repo,
                                       const std::string& rest, bool need_path) {
  std::vector<std::size_t> cuts;  // candidate revision ends, longest first
  if (!need_path) cuts.push_back(rest.size());
  for (auto pos = rest.rfind('/'); pos != std::string::npos && pos > 0;
       pos = rest.rfind('/', pos - 1)) {
    cuts.push_back(pos);
  }
  for (const auto cut : cuts) {
    const std::string revision = rest.substr(0, cut);
    auto commit = store.resolve(repo, revision);
    if (commit) {
      return RevisionAndPath{revision, *commit, cut < rest.size() ? rest.substr(cut + 1) : ""};
    }
    if (commit.error().code != ErrorCode::revision_not_found) return fail(commit.error());
  }
  if (!store.has_repo(repo))
    return fail(ErrorCode::repo_not_found, "repository " + repo.str() + " not found");
  const std::string shown = rest.substr(0, rest.find('/'));
  return fail(ErrorCode::revision_not_found, "revision '" + shown + "' not found in " + repo.str());
}

}  // namespace kernelhub::hub::server
