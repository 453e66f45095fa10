#include "hub/api_url.hpp"

#include <algorithm>
#include <cctype>

namespace kernelhub::hub {
namespace {

struct Parts {
  std::string_view scheme;     // "https"
  std::string_view authority;  // "host:port"
  std::string_view rest;       // "/path?query", may be empty
};

std::optional<Parts> split(std::string_view url) {
  const auto colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  Parts parts;
  parts.scheme = url.substr(0, colon);
  const auto host_start = colon + 3;
  const auto path_start = url.find_first_of("/?#", host_start);
  parts.authority =
      url.substr(host_start, path_start == std::string_view::npos ? std::string_view::npos
                                                                  : path_start - host_start);
  if (parts.authority.empty()) return std::nullopt;
  if (path_start != std::string_view::npos) parts.rest = url.substr(path_start);
  return parts;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

bool is_host_less(std::string_view location) {
  return location.find("://") == std::string_view::npos && !location.starts_with("//");
}

std::optional<std::string> resolve_location(std::string_view base, std::string_view location) {
  const auto parts = split(base);
  if (!parts) return std::nullopt;
  const std::string scheme(parts->scheme);
  if (location.find("://") != std::string_view::npos) return std::string(location);
  if (location.starts_with("//")) return scheme + ":" + std::string(location);
  const std::string origin = scheme + "://" + std::string(parts->authority);
  if (location.starts_with("/")) return origin + std::string(location);
  // Relative to the base's folder: everything up to its last '/' before any query.
  std::string_view path = parts->rest.substr(0, parts->rest.find_first_of("?#"));
  if (path.empty()) return origin + "/" + std::string(location);
  if (location.empty()) return origin + std::string(parts->rest);
  return origin + std::string(path.substr(0, path.rfind('/') + 1)) + std::string(location);
}

std::optional<std::string> url_origin(std::string_view url) {
  const auto parts = split(url);
  if (!parts) return std::nullopt;
  const std::string scheme = lower(parts->scheme);
  std::string authority = lower(parts->authority);
  if (const auto at = authority.rfind('@'); at != std::string::npos) authority.erase(0, at + 1);
  const auto bracket = authority.rfind(']');  // IPv6 literal: the port follows the ']'
  const auto colon = authority.rfind(':');
  const bool has_port =
      colon != std::string::npos && (bracket == std::string::npos || colon > bracket);
  if (!has_port) authority += scheme == "https" ? ":443" : scheme == "http" ? ":80" : "";
  return scheme + "://" + authority;
}

Result<std::optional<ApiRepo>> api_repo_in_url(std::string_view url, std::string_view endpoint) {
  const auto parts = split(url);
  const auto endpoint_parts = split(endpoint);
  if (!parts || !endpoint_parts) return std::optional<ApiRepo>();
  std::string_view path = parts->rest.substr(0, parts->rest.find_first_of("?#"));
  // A path-prefixed endpoint (a mirror at https://host/hf) keeps its prefix on API URLs.
  const std::string_view prefix = endpoint_parts->rest;
  if (!prefix.empty() && path.starts_with(prefix)) path.remove_prefix(prefix.size());
  ApiRepo found;
  if (path.starts_with("/api/kernels/")) {
    path.remove_prefix(std::string_view("/api/kernels/").size());
    found.kind = RepoKind::kernel;
  } else if (path.starts_with("/api/models/")) {
    path.remove_prefix(std::string_view("/api/models/").size());
    found.kind = RepoKind::model;
  } else {
    return std::optional<ApiRepo>();
  }
  const auto org_end = path.find('/');
  const auto name_end = org_end == std::string_view::npos ? org_end : path.find('/', org_end + 1);
  auto repo = trust::RepoId::parse(path.substr(0, name_end));
  if (!repo) {
    return fail(ErrorCode::malformed_response, "a Hub redirect names an invalid repo (" +
                                                   repo.error().message + "): " + std::string(url));
  }
  found.repo = std::move(*repo);
  return std::optional<ApiRepo>(std::move(found));
}

}  // namespace kernelhub::hub
