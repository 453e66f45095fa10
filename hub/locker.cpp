#include "kernelhub/hub/locker.hpp"

#include <algorithm>

#include "kernelhub/hub/fetcher.hpp"
#include "kernelhub/trust/metadata.hpp"

namespace kernelhub::hub {
namespace {

std::string describe_path(const std::vector<trust::KernelDependency>& path,
                          const trust::KernelDependency& last) {
  std::string out;
  for (const auto& step : path) out += step.repo.str() + " -> ";
  return out + last.repo.str();
}

}  // namespace

Locker::Locker(HubConfig config, HttpClient& http, trust::AdminPolicy policy,
               trust::TrustEnvironment trust_env)
    : api_(std::move(config), http), policy_(std::move(policy)), trust_env_(trust_env) {
  api_.set_move_check(trusted_moves(policy_, trust_env_));
}

Result<trust::Lockfile> Locker::lock(const std::vector<trust::KernelDependency>& dependencies,
                                     trust::LockFormat format) {
  format_ = format;
  locked_.clear();
  for (const auto& dependency : dependencies) {
    std::vector<trust::KernelDependency> path;
    KH_TRY(lock_tree(dependency, path));
  }
  trust::Lockfile lock;
  lock.format = format;
  for (auto& [dependency, entry] : locked_) lock.entries.push_back(std::move(entry));
  locked_.clear();
  return lock;
}

Result<void> Locker::lock_tree(const trust::KernelDependency& dependency,
                               std::vector<trust::KernelDependency>& path) {
  if (locked_.contains(dependency)) return ok();
  if (std::find(path.begin(), path.end(), dependency) != path.end()) {
    return fail(ErrorCode::malformed_response,
                "cyclic kernel dependency: " + describe_path(path, dependency));
  }
  if (locked_.size() >= kMaxLockedKernels) {
    return fail(ErrorCode::too_large, "more than " + std::to_string(kMaxLockedKernels) +
                                          " kernels in the dependency graph of " +
                                          path.front().describe());
  }
  // The publisher decision comes before the Hub is asked anything about the repo.
  const auto decision = trust::decide_trust(policy_, dependency.repo.org, trust_env_);
  if (!decision.allowed) {
    const std::string via =
        path.empty() ? "" : " (a dependency of " + describe_path(path, dependency) + ")";
    return fail(decision.code, decision.reason + via);
  }
  KH_TRY_ASSIGN(auto commit, dependency.has_version()
                                 ? api_.resolve_version(dependency.repo, dependency.version())
                                 : api_.resolve_revision(dependency.repo, dependency.revision()));

  auto build = api_.list_tree(dependency.repo, commit, "build", false);
  if (!build) {
    if (build.error().code != ErrorCode::entry_not_found) return fail(build.error());
    return fail(ErrorCode::no_matching_variant,
                dependency.repo.str() + " at " + commit + " has no build/ folder");
  }
  trust::LockEntry entry{dependency.repo, dependency, commit, {}};
  path.push_back(dependency);
  for (const auto& folder : *build) {
    if (folder.is_file) continue;
    const std::string variant = folder.path.substr(std::string_view("build/").size());
    // Every variant's dependencies are locked, not only this host's: the lock travels.
    KH_TRY_ASSIGN(auto depends, variant_dependencies(dependency.repo, commit, variant));
    for (const auto& next : depends) KH_TRY(lock_tree(next, path));
    // kernels <= 0.16 hashed only the torch variants (never tvm-ffi ones).
    if (format_ == trust::LockFormat::legacy && variant.starts_with("torch")) {
      KH_TRY_ASSIGN(auto hash, legacy_hash(dependency.repo, commit, variant));
      entry.variant_hashes.emplace(variant, std::move(hash));
    }
  }
  path.pop_back();
  locked_.emplace(dependency, std::move(entry));
  return ok();
}

Result<std::vector<trust::KernelDependency>> Locker::variant_dependencies(
    const trust::RepoId& repo, const std::string& commit, const std::string& variant) {
  const std::string file = "build/" + variant + "/metadata.json";
  KH_TRY_ASSIGN(auto text, api_.read_optional_file(repo, commit, file, trust::kMaxMetadataBytes));
  if (!text) return std::vector<trust::KernelDependency>{};  // builds before metadata.json
  auto metadata = trust::parse_kernel_metadata(*text);
  if (!metadata) {
    return fail(metadata.error().code,
                repo.str() + "@" + commit + " " + file + ": " + metadata.error().message);
  }
  return std::move(metadata->kernel_depends);
}

Result<std::string> Locker::legacy_hash(const trust::RepoId& repo, const std::string& commit,
                                        const std::string& variant) {
  const std::string folder = "build/" + variant;
  KH_TRY_ASSIGN(auto files, api_.list_tree(repo, commit, folder, true));
  std::vector<std::pair<std::string, std::string>> ids;
  for (const auto& entry : files) {
    if (!entry.is_file || is_ignored_kernel_file(entry.path)) continue;
    ids.emplace_back(entry.path.substr(folder.size() + 1), entry.etag());
  }
  return trust::git_lfs_concat_hash(std::move(ids));
}

}  // namespace kernelhub::hub
