// Pure URL helpers: building a repo's Hub URLs from checked parts, and, for following Hub API
// redirects and pages, resolving a Location against the URL that answered it, comparing
// origins, spotting dot segments and reading the repo an API URL names (a renamed or
// transferred repo answers with a 307 to its new /api/... path). No I/O here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kernelhub/hub/hub_api.hpp"
#include "kernelhub/trust/repo_id.hpp"

namespace kernelhub::hub {

// The one place a repo's Hub URL is built, from checked parts only: the repo id is parsed
// again (trust::RepoId), the revision must pass trust::validate_revision and the path
// trust::validate_repo_path (the tree route also takes "", the root), then each is
// percent-encoded (the revision's '/' too, as huggingface_hub quotes it). So no '.' or '..'
// segment, control character or encoded separator can make a URL of one repo name another
// repo or endpoint. invalid_argument (repo id, revision) or unsafe_path (path): nothing built.
Result<std::string> repo_url(std::string_view endpoint, RepoKind kind, const trust::RepoId& repo,
                             RepoRoute route, std::string_view revision = {},
                             std::string_view path = {});

// Whether the path of `url` (before any query) has a "." or ".." segment, raw or
// percent-encoded, with '/' or an encoded "%2F" as the separator: a URL the Hub sends
// (Location, Link) that a normalising server or proxy would read as another path.
bool has_dot_segment(std::string_view url);

// `location` resolved against `base` (an absolute http(s) URL), as a browser or Python's
// urljoin does for the forms the Hub sends: absolute ("https://h/x"), scheme-relative
// ("//h/x"), path-absolute ("/x") and path-relative ("x", "../x" is not resolved further).
// nullopt when `base` is not an absolute URL.
std::optional<std::string> resolve_location(std::string_view base, std::string_view location);

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
