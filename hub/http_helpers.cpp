// Pure interpretation of Hub HTTP headers; no I/O here.
#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "curl_handles.hpp"
#include "kernelhub/hub/http.hpp"
#include "kernelhub/util/json_bounds.hpp"
#include "kernelhub/util/strings.hpp"

namespace kernelhub::hub {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  return text;
}

std::optional<long long> to_int(std::string_view text) {
  text = trim(text);
  long long value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

constexpr std::size_t kMaxServerText = 300;  // bytes of each server-provided text

// One line of at most `max` bytes: control characters become spaces, and a cut never
// splits a UTF-8 sequence. The CLI prints errors as a single line.
std::string one_line(std::string_view text, std::size_t max = kMaxServerText) {
  text = trim(text);
  const bool cut = text.size() > max;
  if (cut) {
    std::size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    text = text.substr(0, n);
  }
  std::string out;
  out.reserve(text.size() + 3);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    out.push_back(c < 0x20 || c == 0x7f ? ' ' : ch);
  }
  if (cut) out += "...";
  return out;
}

// Server-provided explanation: X-Error-Message, then JSON {"error": ...}, then the raw
// body if short. Any body is hostile: the parse is bounded in size, depth and values
// (a 200,000-deep "error" once crashed the recursive dump()), and each text is cut short.
std::string server_message(const HeaderMap& headers, std::string_view body) {
  std::string message;
  if (auto it = headers.find("x-error-message"); it != headers.end())
    message = one_line(it->second);
  const auto json = util::parse_bounded_json(body, util::kErrorBodyJson);
  if (json && json->is_object()) {
    if (const auto err = json->find("error"); err != json->end()) {
      const std::string text = one_line(
          err->is_string() ? err->get_ref<const std::string&>()
                           : err->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      if (text != message) message = message.empty() ? text : message + " (" + text + ")";
    }
  }
  if (message.empty() && !json && !body.empty() && body.size() <= 200) message = one_line(body);
  return message;
}

}  // namespace

std::optional<std::string> HttpResponse::header(std::string_view lower_name) const {
  const auto it = headers.find(lower_name);
  if (it == headers.end()) return std::nullopt;
  return it->second;
}

std::string normalize_etag(std::string_view etag) {
  etag = trim(etag);
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  while (!etag.empty() && etag.front() == '"') etag.remove_prefix(1);
  while (!etag.empty() && etag.back() == '"') etag.remove_suffix(1);
  return std::string(etag);
}

std::optional<std::string> parse_link_next(std::string_view link_header) {
  // Link: <url1>; rel="next", <url2>; rel="xet-auth"
  std::size_t pos = 0;
  while (pos < link_header.size()) {
    const auto open = link_header.find('<', pos);
    if (open == std::string_view::npos) return std::nullopt;
    const auto close = link_header.find('>', open);
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view url = link_header.substr(open + 1, close - open - 1);
    auto end = link_header.find('<', close);
    const std::string_view params =
        link_header.substr(close + 1, end == std::string_view::npos ? end : end - close - 1);
    std::size_t p = 0;
    while (p < params.size()) {
      auto semi = params.find(';', p);
      std::string_view param =
          trim(params.substr(p, semi == std::string_view::npos ? semi : semi - p));
      p = semi == std::string_view::npos ? params.size() : semi + 1;
      const auto eq = param.find('=');
      if (eq == std::string_view::npos || util::ascii_lower(trim(param.substr(0, eq))) != "rel")
        continue;
      std::string_view value = trim(param.substr(eq + 1));
      if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        value = value.substr(1, value.size() - 2);
      value = trim(value);
      // rel may hold several space-separated relation types.
      std::size_t q = 0;
      while (q <= value.size()) {
        const auto space = value.find(' ', q);
        const auto token = value.substr(q, space == std::string_view::npos ? space : space - q);
        if (util::ascii_lower(token) == "next") return std::string(url);
        if (space == std::string_view::npos) break;
        q = space + 1;
      }
    }
    pos = end == std::string_view::npos ? link_header.size() : end;
  }
  return std::nullopt;
}

std::optional<int> retry_after_seconds(const HeaderMap& headers) {
  if (auto it = headers.find("ratelimit"); it != headers.end()) {
    // "api";r=0;t=55 — wait t+1 seconds when the remaining quota r is 0 (or not given).
    std::optional<long long> remaining;
    std::optional<long long> reset;
    std::string_view value = it->second;
    std::size_t p = 0;
    while (p <= value.size()) {
      const auto semi = value.find(';', p);
      const auto part = trim(value.substr(p, semi == std::string_view::npos ? semi : semi - p));
      if (part.starts_with("r=")) remaining = to_int(part.substr(2));
      if (part.starts_with("t=")) reset = to_int(part.substr(2));
      if (semi == std::string_view::npos) break;
      p = semi + 1;
    }
    if (reset && *reset >= 0 && (!remaining || *remaining == 0))
      return static_cast<int>(std::min(*reset + 1, 3600LL));
  }
  if (auto it = headers.find("retry-after"); it != headers.end()) {
    if (auto seconds = to_int(it->second); seconds && *seconds >= 0)
      return static_cast<int>(std::min(*seconds, 3600LL));
  }
  return std::nullopt;
}

namespace {

// huggingface_hub's REPO_API_REGEX: /api/{type}s/{repo}... is an API URL of a repo, and
// /{repo}/resolve/... a file URL of one.
enum class RepoUrl { none, api, file };
RepoUrl repo_url_kind(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme == std::string_view::npos) return RepoUrl::none;
  const auto path_start = url.find('/', scheme + 3);
  if (path_start == std::string_view::npos) return RepoUrl::none;
  std::string_view path = url.substr(path_start);
  path = path.substr(0, path.find_first_of("?#"));
  for (const std::string_view type : {"kernels/", "models/", "datasets/", "spaces/"}) {
    const auto at = path.find("/api/" + std::string(type));
    if (at != std::string_view::npos && path.size() > at + 5 + type.size()) return RepoUrl::api;
  }
  const auto resolve = path.find("/resolve/");
  if (resolve != std::string_view::npos && resolve > 0) return RepoUrl::file;
  return RepoUrl::none;
}

}  // namespace

Error map_http_error(int status, const HeaderMap& headers, std::string_view body,
                     std::string_view url) {
  const std::string message = server_message(headers, body);
  const auto with = [&](std::string what) {
    what += " (HTTP " + std::to_string(status) + " from " + std::string(url) + ")";
    if (!message.empty()) what += ": " + message;
    return what;
  };
  std::string code;
  if (auto it = headers.find("x-error-code"); it != headers.end())
    code = std::string(trim(it->second));
  if (code == "RepoNotFound") return {ErrorCode::repo_not_found, with("repository not found")};
  if (code == "RevisionNotFound")
    return {ErrorCode::revision_not_found, with("revision not found")};
  if (code == "EntryNotFound") return {ErrorCode::entry_not_found, with("file not found")};
  if (code == "GatedRepo")
    return {ErrorCode::gated, with("gated repository: request access on the Hub and set HF_TOKEN")};
  // The Hub answers a missing repo, and a private or gated one asked without a token, with a
  // bare 401 ("Invalid username or password."); only a rejected token says so explicitly.
  const bool bad_token =
      message.find("Invalid credentials in Authorization header") != std::string::npos;
  const auto repo_url = code.empty() ? repo_url_kind(url) : RepoUrl::none;
  if (!bad_token && ((status == 401 && repo_url != RepoUrl::none) ||
                     (status == 404 && repo_url == RepoUrl::api))) {
    return {ErrorCode::repo_not_found,
            with("repository not found (or private: set HF_TOKEN to a token with access)")};
  }
  if (status == 401 || status == 403) {
    return {ErrorCode::unauthorized, with("not authorized: check HF_TOKEN and its permissions")};
  }
  if (status == 429) return {ErrorCode::rate_limited, with("rate limited by the Hub")};
  return {ErrorCode::http_status, with("unexpected status")};
}

bool is_retryable_status(int status) {
  return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 ||
         status == 504;
}

void add_header_line(HeaderMap& headers, std::string_view line) {
  line = trim(line);
  if (line.empty()) return;
  if (line.starts_with("HTTP/")) {
    headers.clear();
    return;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return;
  std::string name = util::ascii_lower(trim(line.substr(0, colon)));
  std::string value(trim(line.substr(colon + 1)));
  auto [it, inserted] = headers.try_emplace(std::move(name), value);
  // Repeated headers (e.g. two Link lines) combine with a comma, as HTTP allows.
  if (!inserted) it->second += ", " + value;
}

}  // namespace kernelhub::hub
