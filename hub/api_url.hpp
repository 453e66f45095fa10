// Pure URL helpers for following Hub API redirects: resolving a Location against the URL
// that answered it, comparing origins, and reading the repo an API URL names (a renamed or
// transferred repo answers with a 307 to its new /api/... path). No I/O here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "hub/hub_api.hpp"
#include "trust/repo_id.hpp"

namespace kernelhub::hub {

// `location` resolved against `base` (an absolute http(s) URL), as a browser or Python's
// urljoin does for the forms the Hub sends: absolute ("https://h/x"), scheme-relative
// ("//h/x"), path-absolute ("/x") and path-relative ("x", "../x" is not resolved further).
// nullopt when `base` is not an absolute URL.
std::optional<std::string> resolve_location(std::string_view base, std::string_view location);

// True when `location` names no host (path-absolute or relative): how huggingface_hub tells
// a Hub-internal redirect from a CDN one on HEAD /resolve.
bool is_host_less(std::string_view location);

// "scheme://host:port" lower-cased, with the scheme's default port made explicit, so that
// "https://H.co/x" and "https://h.co:443/y" compare equal. nullopt for a non-URL.
std::optional<std::string> url_origin(std::string_view url);

// The repo and repo type an API URL under `endpoint` names: {endpoint}/api/{kernels|models}/
// {org}/{name}[/...]. nullopt when the URL is not a repo API URL; an error when it looks like
// one but its repo id is invalid (a hostile Location must not slip past the trust check).
struct ApiRepo {
  RepoKind kind = RepoKind::kernel;
  trust::RepoId repo;
};
Result<std::optional<ApiRepo>> api_repo_in_url(std::string_view url, std::string_view endpoint);

}  // namespace kernelhub::hub
