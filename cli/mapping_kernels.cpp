#include "mapping_kernels.hpp"

#include <map>

namespace kernelhub::cli {

Result<MappingKernels> read_mapping_kernels(const std::string& path, const util::Environment& env) {
  KH_TRY_ASSIGN(const auto mapping, trust::read_layer_mapping(path));
  const auto mapped = trust::mapped_kernels(mapping);
  MappingKernels out;
  out.local = mapped.local;
  for (const auto& dependency : mapped.hub) {
    auto ref = dependency.has_version()
                   ? fetch::Ref::version(static_cast<std::int64_t>(dependency.version()))
                   : fetch::Ref::revision(dependency.revision());
    if (!ref) return fail(ref.error());
    out.kernels.push_back({dependency.repo, std::move(*ref), std::nullopt});
  }
  std::map<std::string, trust::Lockfile> locks;  // each lockfile read once
  for (const auto& [repo, lockfile] : mapped.locked) {
    std::string lock_path;
    if (lockfile) {
      lock_path = lockfile->string();
    } else if (auto in_force = env.get("KERNELHUB_LOCKFILE"); in_force && !in_force->empty()) {
      lock_path = *in_force;
    } else {
      return fail(ErrorCode::not_locked,
                  path + ": " + repo.str() +
                      " is mapped `locked = true` (the lockfile in force): set KERNELHUB_LOCKFILE "
                      "to the project's kernels.lock");
    }
    auto it = locks.find(lock_path);
    if (it == locks.end()) {
      KH_TRY_ASSIGN(auto lock, trust::read_lockfile(lock_path));
      it = locks.emplace(lock_path, std::move(lock)).first;
    }
    const auto* entry = it->second.find(repo);
    if (entry == nullptr) {
      std::string message = path + ": " + repo.str();
      message += " is not in the lockfile " + lock_path + "; lock it with `kernelhub lock`";
      return fail(ErrorCode::not_locked, std::move(message));
    }
    out.kernels.push_back({repo, std::nullopt, *entry});
  }
  return out;
}

}  // namespace kernelhub::cli
