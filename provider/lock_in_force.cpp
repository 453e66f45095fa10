#include "lock_in_force.hpp"

#include <mutex>
#include <utility>

#include "kernel_errors.hpp"
#include "kernelhub/provider/process_environment.hpp"

namespace kernelhub::provider {
namespace {

// Guarded by g_lock_mutex.
std::mutex g_lock_mutex;
std::optional<std::optional<std::string>> g_lockfile_override;
std::optional<std::pair<std::string, trust::Lockfile>> g_lockfile;

std::string relock_advice(const HubKernelSpec& spec, const trust::RepoId& repo) {
  if (!spec.version && !spec.revision) {
    return "Lock " + repo.str() + " in the lockfile (`kernelhub lock`).";
  }
  if (spec.version) {
    return "Add \"" + repo.str() + "\" = " + std::to_string(*spec.version) +
           " to [tool.kernels.dependencies] and run `kernelhub lock`, or unset "
           "KERNELHUB_LOCKFILE.";
  }
  // [tool.kernels.dependencies] takes versions only: a revision is locked by hand.
  return "Lock " + repo.str() + " at revision " + spec.revision.value_or("") +
         " in the lockfile, or unset KERNELHUB_LOCKFILE.";
}

// Why `entry` does not lock what the spec asks for; empty when it does. A pin of the other
// kind (a version for a revision spec, or the reverse) leaves the choice to the lock.
std::string lock_mismatch(const HubKernelSpec& spec, const trust::LockEntry& entry) {
  if (!entry.dependency) return {};
  const trust::KernelDependency& locked = *entry.dependency;
  if (spec.version && locked.has_version() && locked.version() != *spec.version) {
    return "the backend loads version " + std::to_string(*spec.version);
  }
  if (spec.revision && !locked.has_version() && locked.revision() != *spec.revision) {
    return std::string(spec.user) + " asks for revision " + *spec.revision;
  }
  return {};
}

// The entry of `lock` (read from `path`) that pins what the spec asks for.
Result<trust::LockEntry> entry_for(const trust::Lockfile& lock, const std::string& path,
                                   const HubKernelSpec& spec, const trust::RepoId& repo,
                                   const std::string& context) {
  const auto* entry = lock.find(repo);
  if (entry == nullptr) {
    return fail(
        in_context({ErrorCode::not_locked, repo.str() + " is not in the lockfile " + path + "."},
                   context, relock_advice(spec, repo)));
  }
  if (const std::string why = lock_mismatch(spec, *entry); !why.empty()) {
    return fail(in_context({ErrorCode::not_locked,
                            path + " locks " + entry->dependency->describe() + ", " + why + "."},
                           context, relock_advice(spec, repo)));
  }
  return *entry;
}

}  // namespace

void set_lockfile_override(std::optional<std::optional<std::string>> path) {
  std::lock_guard lock(g_lock_mutex);
  g_lockfile_override = std::move(path);
  g_lockfile.reset();
}

void forget_parsed_lockfile() {
  std::lock_guard lock(g_lock_mutex);
  g_lockfile.reset();
}

Result<std::optional<trust::LockEntry>> locked_entry(const HubKernelSpec& spec,
                                                     const trust::RepoId& repo,
                                                     const std::string& context) {
  std::lock_guard lock(g_lock_mutex);
  const std::optional<std::string> path =
      g_lockfile_override ? *g_lockfile_override : process_environment().get("KERNELHUB_LOCKFILE");
  if (!path || path->empty()) return std::optional<trust::LockEntry>();
  if (!g_lockfile || g_lockfile->first != *path) {
    auto parsed = trust::read_lockfile(*path);
    if (!parsed) return fail(in_context(parsed.error(), context, "Check KERNELHUB_LOCKFILE."));
    g_lockfile.emplace(*path, std::move(*parsed));
  }
  KH_TRY_ASSIGN(auto entry, entry_for(g_lockfile->second, *path, spec, repo, context));
  return std::optional<trust::LockEntry>(std::move(entry));
}

Result<trust::LockEntry> locked_entry_in(const std::string& path, const HubKernelSpec& spec,
                                         const trust::RepoId& repo, const std::string& context) {
  auto parsed = trust::read_lockfile(path);
  if (!parsed) return fail(in_context(parsed.error(), context, "Check the layer's lockfile."));
  return entry_for(*parsed, path, spec, repo, context);
}

}  // namespace kernelhub::provider
