#include "kernelhub/trust/kernel_dependency.hpp"

#include <charconv>

#include "kernelhub/trust/safe_path.hpp"

namespace kernelhub::trust {

std::optional<std::uint64_t> version_of_branch(std::string_view name) {
  if (name.size() < 2 || name.front() != 'v' || name[1] == '+' || name[1] == '-') {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), value);
  if (ec != std::errc() || ptr != name.data() + name.size()) return std::nullopt;
  return value;
}

std::string KernelDependency::describe() const {
  return repo.str() + (has_version() ? " version " + std::to_string(version())
                                     : " revision " + trust::sanitize_for_message(revision()));
}

std::strong_ordering KernelDependency::operator<=>(const KernelDependency& other) const {
  if (auto by_repo = repo.str().compare(other.repo.str()); by_repo != 0) {
    return by_repo < 0 ? std::strong_ordering::less : std::strong_ordering::greater;
  }
  return pin <=> other.pin;
}

Result<KernelDependency> parse_kernel_dependency(const nlohmann::json& node, std::string_view where,
                                                 ErrorCode code) {
  const auto bad = [&](const std::string& why) {
    return fail(code, std::string(where) + ": " + why);
  };
  if (!node.is_object()) return bad("a dependency must be an object");
  for (const auto& [key, value] : node.items()) {
    if (key != "repo-id" && key != "version" && key != "revision") {
      return bad("unknown member '" + trust::sanitize_for_message(key) +
                 "' (expected repo-id and version or revision)");
    }
  }
  const auto repo_it = node.find("repo-id");
  if (repo_it == node.end() || !repo_it->is_string()) return bad("'repo-id' must be a string");
  auto repo = RepoId::parse(repo_it->get_ref<const std::string&>());
  if (!repo) return bad(repo.error().message);

  const auto version = node.find("version");
  const auto revision = node.find("revision");
  if ((version == node.end()) == (revision == node.end())) {
    return bad("exactly one of 'version' and 'revision' is needed for " + repo->str());
  }
  if (version != node.end()) {
    if (!version->is_number_unsigned()) {
      return bad("'version' of " + repo->str() + " must be a non-negative integer");
    }
    return KernelDependency{*repo, version->get<std::uint64_t>()};
  }
  if (!revision->is_string() || revision->get_ref<const std::string&>().empty() ||
      revision->get_ref<const std::string&>().size() > kMaxRevisionText) {
    return bad("'revision' of " + repo->str() + " must be a string of 1 to 256 characters");
  }
  return KernelDependency{*repo, revision->get<std::string>()};
}

nlohmann::ordered_json to_json(const KernelDependency& dependency) {
  nlohmann::ordered_json out;
  out["repo-id"] = dependency.repo.str();
  if (dependency.has_version()) {
    out["version"] = dependency.version();
  } else {
    out["revision"] = dependency.revision();
  }
  return out;
}

}  // namespace kernelhub::trust
