#include "kernelhub/hub/api_url.hpp"

#include <algorithm>
#include <cctype>

#include "kernelhub/hub/http.hpp"
#include "kernelhub/trust/revision.hpp"
#include "kernelhub/trust/safe_path.hpp"
#include "kernelhub/util/strings.hpp"

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

// "%2e" / "%2E" -> '.'; other text as is (only dots matter to has_dot_segment).
std::string decode_dots(std::string_view segment) {
  std::string out;
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '%' && i + 2 < segment.size() && segment[i + 1] == '2' &&
        std::tolower(static_cast<unsigned char>(segment[i + 2])) == 'e') {
      out.push_back('.');
      i += 2;
    } else {
      out.push_back(segment[i]);
    }
  }
  return out;
}

const char* route_name(RepoRoute route) {
  switch (route) {
    case RepoRoute::refs:
      return "refs";
    case RepoRoute::revision:
      return "revision";
    case RepoRoute::tree:
      return "tree";
    case RepoRoute::commits:
      return "commits";
    case RepoRoute::resolve:
      return "resolve";
  }
  return "";
}

}  // namespace

Result<std::string> repo_url(std::string_view endpoint, RepoKind kind, const trust::RepoId& repo,
                             RepoRoute route, std::string_view revision, std::string_view path) {
  // a RepoId may be built without parse()
  KH_TRY_ASSIGN(auto id, trust::RepoId::parse(repo.str()));
  std::string url(endpoint);
  if (route == RepoRoute::resolve) {
    url += (kind == RepoKind::kernel ? "/kernels/" : "/") + id.str() + "/resolve";
  } else {
    url += (kind == RepoKind::kernel ? "/api/kernels/" : "/api/models/") + id.str() + "/" +
           route_name(route);
  }
  if (route == RepoRoute::refs) return url;
  KH_TRY_ASSIGN(auto rev, trust::validate_revision(revision));
  url += "/" + util::url_encode(rev, false);
  if (route == RepoRoute::revision || route == RepoRoute::commits) return url;
  if (path.empty() && route == RepoRoute::tree) return url;
  KH_TRY_ASSIGN(auto safe, trust::validate_repo_path(path));
  return url + "/" + util::url_encode(safe, true);
}

bool has_dot_segment(std::string_view url) {
  std::string_view path = url;
  if (const auto parts = split(url)) path = parts->rest;
  path = path.substr(0, path.find_first_of("?#"));
  std::string segment;
  const auto done = [&] {
    const std::string text = decode_dots(segment);
    segment.clear();
    return text == "." || text == "..";
  };
  for (std::size_t i = 0; i < path.size(); ++i) {
    const bool encoded_slash = path[i] == '%' && i + 2 < path.size() && path[i + 1] == '2' &&
                               std::tolower(static_cast<unsigned char>(path[i + 2])) == 'f';
    if (path[i] == '/' || encoded_slash) {
      if (done()) return true;
      if (encoded_slash) i += 2;
      continue;
    }
    segment.push_back(path[i]);
  }
  return done();
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
  const std::string scheme = util::ascii_lower(parts->scheme);
  std::string authority = util::ascii_lower(parts->authority);
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
