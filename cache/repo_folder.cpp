#include "kernelhub/cache/repo_folder.hpp"

namespace kernelhub::cache {
namespace {

constexpr std::string_view kSeparator = "--";

std::string_view prefix_of(RepoKind kind) {
  return kind == RepoKind::kernels ? "kernels" : "models";
}

}  // namespace

std::string repo_folder_name(const trust::RepoId& repo, RepoKind kind) {
  std::string out(prefix_of(kind));
  out.append(kSeparator).append(repo.org).append(kSeparator).append(repo.name);
  return out;
}

std::optional<trust::RepoId> parse_repo_folder_name(std::string_view folder) {
  const std::string prefix = std::string(prefix_of(RepoKind::kernels)) + std::string(kSeparator);
  if (!folder.starts_with(prefix)) return std::nullopt;
  const std::string_view rest = folder.substr(prefix.size());
  const auto sep = rest.find(kSeparator);
  if (sep == std::string_view::npos) return std::nullopt;
  std::string text(rest.substr(0, sep));
  text.append("/").append(rest.substr(sep + kSeparator.size()));
  auto id = trust::RepoId::parse(text);
  if (!id) return std::nullopt;
  return *id;
}

}  // namespace kernelhub::cache
