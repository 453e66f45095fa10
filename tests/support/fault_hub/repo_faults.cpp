// FaultPlan's real-Hub behaviours on repo routes (API and resolve): a renamed or transferred
// repo answers 307 with a relative Location, an anonymous request for a missing or private repo
// answers a bare 401, and legacy repos exist only under the model type.
#include "kernelhub/http/http_replies.hpp"
#include "support/fault_hub/fault_hooks.hpp"

namespace kernelhub::testing {
namespace {

// A repo route split around its repo id: prefix + "org/name" + suffix.
struct RepoRoute {
  bool kernel_type = false;
  std::string prefix;  // "/api/kernels/", "/api/models/", "/kernels/" or "/"
  trust::RepoId repo;
  std::string suffix;  // "/refs", "/resolve/main/x", "" ...
};

std::optional<RepoRoute> repo_route(const std::string& path) {
  RepoRoute route;
  bool resolve = false;
  if (path.rfind("/api/kernels/", 0) == 0) {
    route.prefix = "/api/kernels/";
    route.kernel_type = true;
  } else if (path.rfind("/api/models/", 0) == 0) {
    route.prefix = "/api/models/";
  } else if (path.rfind("/api/", 0) == 0 || path.rfind("/lfs-objects/", 0) == 0 ||
             path.rfind("/_kernelhub/", 0) == 0) {
    return std::nullopt;
  } else if (path.rfind("/kernels/", 0) == 0) {
    route.prefix = "/kernels/";
    route.kernel_type = true;
    resolve = true;
  } else {
    route.prefix = "/";
    resolve = true;
  }
  const auto org_end = path.find('/', route.prefix.size());
  if (org_end == std::string::npos) return std::nullopt;
  const auto name_end = path.find('/', org_end + 1);
  auto repo = trust::RepoId::parse(std::string_view(path).substr(
      route.prefix.size(),
      name_end == std::string::npos ? std::string::npos : name_end - route.prefix.size()));
  if (!repo) return std::nullopt;
  route.repo = std::move(*repo);
  route.suffix = name_end == std::string::npos ? "" : path.substr(name_end);
  if (resolve && route.suffix.rfind("/resolve/", 0) != 0) return std::nullopt;
  return route;
}

}  // namespace

bool FaultHooks::answer_repo_faults(const FaultPlan& plan, const httplib::Request& req,
                                    httplib::Response& res) const {
  if (plan.renames.empty() && !plan.anonymous_401 && plan.model_only_repos.empty()) return false;
  const auto route = repo_route(req.path);
  if (!route) return false;
  const std::string repo = route->repo.str();

  if (const auto it = plan.renames.find(repo); it != plan.renames.end()) {
    const auto query = req.target.find('?');
    std::string location = route->prefix + it->second + route->suffix;
    if (query != std::string::npos) location += req.target.substr(query);
    http::take_ranges(req);
    res.status = 307;
    res.set_header("Location", location);
    res.set_content("Temporary Redirect. Redirecting to " + location, "text/plain");
    return true;
  }

  const bool model_only = route->kernel_type && plan.model_only_repos.count(repo) > 0;
  const bool missing = model_only || !store_.has_repo(route->repo);
  const bool anonymous = req.get_header_value("Authorization").empty();
  if (plan.anonymous_401 && anonymous && (missing || plan.private_repos.count(repo) > 0)) {
    http::take_ranges(req);
    res.status = 401;
    res.set_header("X-Error-Message", "Invalid username or password.");  // and no X-Error-Code
    res.set_content(R"({"error":"Invalid username or password."})", "application/json");
    return true;
  }
  if (model_only) {
    http::take_ranges(req);
    http::send_error(res, 404, "RepoNotFound", "repository " + repo + " is not a kernel repo");
    return true;
  }
  return false;
}

}  // namespace kernelhub::testing
